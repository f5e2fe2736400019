package aspects

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

type rec struct {
	Everywhere
	name  string
	order int
	log   *[]string
}

func (r rec) Order() int { return r.order }
func (r rec) Before(context.Context, *Point, *RunInput) error {
	*r.log = append(*r.log, "before:"+r.name)
	return nil
}
func (r rec) Around(ctx context.Context, p *Point, in *RunInput, next RunFunc) (*RunOutput, error) {
	*r.log = append(*r.log, "enter:"+r.name)
	out, err := next(ctx, in)
	*r.log = append(*r.log, "leave:"+r.name)
	return out, err
}

func TestOrderAndNesting(t *testing.T) {
	var log []string
	m, err := NewManager(rec{name: "b", order: 2, log: &log}, rec{name: "a", order: 1, log: &log}, rec{name: "c", order: 2, log: &log})
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Before(context.Background(), &Point{}, &RunInput{})
	_, _ = m.Around(context.Background(), &Point{}, &RunInput{}, func(context.Context, *RunInput) (*RunOutput, error) {
		log = append(log, "core")
		return &RunOutput{}, nil
	})
	want := []string{"before:a", "before:b", "before:c", "enter:a", "enter:b", "enter:c", "core", "leave:c", "leave:b", "leave:a"}
	if !slices.Equal(log, want) {
		t.Fatalf("got %v\nwant %v", log, want)
	}
}

type pointless struct{ Everywhere }

func (pointless) Order() int { return 0 }

func TestManagerRejectsNonAspects(t *testing.T) {
	if _, err := NewManager(pointless{}); err == nil {
		t.Fatal("a value with no point was accepted")
	}
}

func TestAroundErrorKinds(t *testing.T) {
	inner := errors.New("inner failure")
	m, _ := NewManager(aroundFn(func(ctx context.Context, in *RunInput, next RunFunc) (*RunOutput, error) { return next(ctx, in) }))
	_, err := m.Around(context.Background(), &Point{}, &RunInput{}, func(context.Context, *RunInput) (*RunOutput, error) { return nil, inner })
	if err != inner {
		t.Fatalf("a passed-on error must keep its identity: %v", err)
	}
	m, _ = NewManager(aroundFn(func(context.Context, *RunInput, RunFunc) (*RunOutput, error) { return nil, errors.New("no") }))
	_, err = m.Around(context.Background(), &Point{}, &RunInput{}, nil)
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("an aspect's own error must be a refusal: %v", err)
	}
}

type aroundFn func(context.Context, *RunInput, RunFunc) (*RunOutput, error)

func (aroundFn) Order() int                            { return 0 }
func (aroundFn) PointCut(context.Context, *Point) bool { return true }
func (f aroundFn) Around(ctx context.Context, _ *Point, in *RunInput, next RunFunc) (*RunOutput, error) {
	return f(ctx, in, next)
}

func TestRegistry(t *testing.T) {
	if err := RegisterFactory("logging", newLogging); err == nil {
		t.Fatal("duplicate registration accepted")
	}
	if _, err := New("nope", nil); err == nil || !strings.Contains(err.Error(), "logging") {
		t.Fatalf("unknown aspect error should list the registered ones: %v", err)
	}
	if _, err := New("logging", json.RawMessage(`{"level":"loud"}`)); err == nil {
		t.Fatal("bad level accepted")
	}
	if _, err := New("logging", json.RawMessage(`{"levle":"debug"}`)); err == nil {
		t.Fatal("unknown field accepted")
	}
	a, err := New("logging", json.RawMessage(`{"level":"debug"}`))
	if err != nil || a.(*Logging).Level != slog.LevelDebug {
		t.Fatalf("%v %v", a, err)
	}
}

func TestLoggingWritesRecords(t *testing.T) {
	var buf bytes.Buffer
	l := &Logging{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), Level: slog.LevelInfo}
	p := &Point{ChainID: "c", RunID: "r"}
	_ = l.OnRunStart(context.Background(), p, &RunInput{})
	_ = l.AfterToolCall(context.Background(), p, &ToolCall{Name: "bash"}, &ToolResult{IsError: true, ErrKind: "timeout", Duration: time.Second})
	l.OnCompleted(context.Background(), p, &RunOutput{Steps: 2}, nil)
	out := buf.String()
	for _, want := range []string{"agent run started", "tool call", "tool=bash", "kind=timeout", "agent run finished", "steps=2"} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %q:\n%s", want, out)
		}
	}
}

// Orders at the ends of int's range sort as numbers: subtracting them
// overflowed and put math.MinInt after math.MaxInt.
func TestOrderExtremes(t *testing.T) {
	var log []string
	m, err := NewManager(rec{name: "last", order: math.MaxInt, log: &log}, rec{name: "first", order: math.MinInt, log: &log},
		rec{name: "middle", order: 0, log: &log})
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Before(context.Background(), &Point{}, &RunInput{})
	if want := []string{"before:first", "before:middle", "before:last"}; !slices.Equal(log, want) {
		t.Fatalf("got %v, want %v", log, want)
	}
}

// wrapping passes the inner run's error on, wrapped with %w.
type wrapping struct{ Everywhere }

func (wrapping) Order() int { return 0 }
func (wrapping) Around(ctx context.Context, _ *Point, in *RunInput, next RunFunc) (*RunOutput, error) {
	out, err := next(ctx, in)
	if err != nil {
		return out, fmt.Errorf("while timing the run: %w", err)
	}
	return out, nil
}

// An Around aspect that wraps the inner run's error (%w) passes it on: it
// is not its own refusal, so the error keeps its identity (an LLM's 400
// stays an LLM error).
func TestAroundWrappingInnerErrorIsNoRefusal(t *testing.T) {
	inner := errors.New("LLM answered 400")
	m, err := NewManager(wrapping{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Around(context.Background(), &Point{}, &RunInput{}, func(context.Context, *RunInput) (*RunOutput, error) { return nil, inner })
	if !errors.Is(err, inner) || errors.Is(err, ErrRefused) {
		t.Fatalf("err %v: want the inner error, not a refusal", err)
	}
	// An error of the aspect's own is a refusal.
	m, _ = NewManager(refuser{})
	_, err = m.Around(context.Background(), &Point{}, &RunInput{}, func(context.Context, *RunInput) (*RunOutput, error) { return &RunOutput{}, nil })
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("err %v: want a refusal", err)
	}
}

type refuser struct{ Everywhere }

func (refuser) Order() int { return 0 }
func (refuser) Around(context.Context, *Point, *RunInput, RunFunc) (*RunOutput, error) {
	return nil, errors.New("not today")
}
