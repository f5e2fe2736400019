package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/metrics"
)

func testSet(t testing.TB, tools ...Tool) *Set {
	t.Helper()
	return setWith(t, func(tl Tool) Spec { return Spec{Type: TypeBuiltin, Timeout: testTimeout(tl)} }, tools...)
}

// setWith builds a set of tools, each entry from the spec spec gives it.
func setWith(t testing.TB, spec func(Tool) Spec, tools ...Tool) *Set {
	t.Helper()
	var entries []*Entry
	for _, tl := range tools {
		e, err := newEntry("tools[0]", tl, spec(tl))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	cat, err := newCatalog(entries)
	if err != nil {
		t.Fatal(err)
	}
	s := &Set{}
	s.cat.Store(cat)
	return s
}

var addSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)

func adder() Tool {
	return Func{Spec: Info{Name: "add", Description: "adds", Parameters: addSchema}, Fn: func(ctx context.Context, args json.RawMessage) (Result, error) {
		var v struct{ A, B float64 }
		if err := json.Unmarshal(args, &v); err != nil {
			return Result{}, err
		}
		return TextResult(strings.TrimSpace(strings.Repeat(" ", 0)) + jsonNum(v.A+v.B)), nil
	}}
}

func jsonNum(f float64) string { b, _ := json.Marshal(f); return string(b) }

type rewriter struct {
	aspects.Everywhere
	refuse  bool
	newArgs string
	after   string
}

func (*rewriter) Order() int { return 1 }
func (w *rewriter) BeforeToolCall(_ context.Context, p *aspects.Point, c *aspects.ToolCall) error {
	if p.Tool != c.Name {
		return errors.New("point has no tool")
	}
	if w.refuse {
		return errors.New("not on my watch")
	}
	if w.newArgs != "" {
		c.Args = json.RawMessage(w.newArgs)
	}
	return nil
}
func (w *rewriter) AfterToolCall(_ context.Context, _ *aspects.Point, _ *aspects.ToolCall, r *aspects.ToolResult) error {
	if w.after != "" {
		r.Content = w.after
	}
	return nil
}

type upper struct{}

func (upper) Scrub(s string) string { return strings.ReplaceAll(s, "SECRET", "[REDACTED]") }

func TestInvoke(t *testing.T) {
	slow := Func{Spec: Info{Name: "slow"}, Fn: func(ctx context.Context, _ json.RawMessage) (Result, error) {
		<-ctx.Done()
		return Result{}, ctx.Err()
	}}
	boom := Func{Spec: Info{Name: "boom"}, Fn: func(context.Context, json.RawMessage) (Result, error) { panic("kaboom") }}
	leak := Func{Spec: Info{Name: "leak"}, Fn: func(context.Context, json.RawMessage) (Result, error) {
		return TextResult("key SECRET " + strings.Repeat("x", 300)), nil
	}}
	soft := Func{Spec: Info{Name: "soft"}, Fn: func(context.Context, json.RawMessage) (Result, error) {
		return Result{Text: "it failed", IsError: true}, nil
	}}
	cases := []struct {
		name     string
		call     Call
		aspect   *rewriter
		content  string // substring
		kind     string
		isError  bool
		rewrite  bool
		truncate bool
	}{
		{name: "ok", call: Call{ID: "1", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)}, content: "3"},
		{name: "unknown tool", call: Call{ID: "2", Name: "nope", Args: json.RawMessage(`{}`)}, content: "no tool named", kind: "not_found", isError: true},
		{name: "bad json", call: Call{ID: "3", Name: "add", Args: json.RawMessage(`{"a":`)}, content: "not valid JSON", kind: "invalid_args", isError: true},
		{name: "schema", call: Call{ID: "4", Name: "add", Args: json.RawMessage(`{"a":"x"}`)}, content: "at /", kind: "invalid_args", isError: true},
		{name: "aspect rewrite", call: Call{ID: "5", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)}, aspect: &rewriter{newArgs: `{"a":10,"b":20}`}, content: "30", rewrite: true},
		{name: "aspect bad rewrite", call: Call{ID: "6", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)}, aspect: &rewriter{newArgs: `{"a":1}`}, kind: "invalid_args", isError: true, rewrite: true},
		{name: "aspect refuse", call: Call{ID: "7", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)}, aspect: &rewriter{refuse: true}, content: "not on my watch", kind: "permission_denied", isError: true},
		{name: "aspect after", call: Call{ID: "8", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)}, aspect: &rewriter{after: "rewritten"}, content: "rewritten"},
		{name: "timeout", call: Call{ID: "9", Name: "slow"}, content: "did not finish", kind: "timeout", isError: true},
		{name: "panic", call: Call{ID: "10", Name: "boom"}, content: "kaboom", kind: "execution_failed", isError: true},
		{name: "scrub and truncate", call: Call{ID: "11", Name: "leak"}, content: "[REDACTED]", truncate: true},
		{name: "in-band error", call: Call{ID: "12", Name: "soft"}, content: "it failed", isError: true},
	}
	set := testSet(t, adder(), slow, boom, leak, soft)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var rec events.Recorder
			r := &Run{Sink: &rec, Scrubber: upper{}, MaxOutput: 200, Point: aspects.Point{RunID: "run1"}}
			if c.aspect != nil {
				m, err := aspects.NewManager(c.aspect)
				if err != nil {
					t.Fatal(err)
				}
				r.Aspects = m
			}
			out := set.Invoke(context.Background(), r, c.call)
			if !strings.Contains(out.Content, c.content) || out.Kind != c.kind || out.IsError != c.isError {
				t.Fatalf("outcome %+v; want content ~%q kind %q isError %v", out, c.content, c.kind, c.isError)
			}
			if strings.Contains(out.Content, "SECRET") {
				t.Fatal("secret not scrubbed")
			}
			evs := rec.Events()
			want := []events.Type{events.ToolCallStart, events.ToolCallArgs, events.ToolCallEnd, events.ToolCallResult}
			if len(evs) != 4 {
				t.Fatalf("events %v", rec.Types())
			}
			for i, ty := range want {
				if evs[i].Type != ty || evs[i].ToolCallID != c.call.ID {
					t.Fatalf("event %d = %s/%s", i, evs[i].Type, evs[i].ToolCallID)
				}
			}
			if evs[1].Delta != string(normaliseArgs(c.call.Args)) && evs[1].Delta != string(c.call.Args) {
				t.Fatalf("ARGS delta %q", evs[1].Delta)
			}
			res := evs[3]
			if res.Content != out.Content || res.Meta.IsError != c.isError || res.Meta.ErrorKind != c.kind ||
				res.Meta.ArgsRewritten != c.rewrite || res.Meta.Truncated != c.truncate || res.MessageID == "" {
				t.Fatalf("RESULT %+v", res)
			}
		})
	}
}

func TestInvokeAnnouncedAndGuards(t *testing.T) {
	set := testSet(t, adder())
	var rec events.Recorder
	r := &Run{Sink: &rec, RepeatLimit: 3, MaxCalls: 4}
	args := json.RawMessage(`{"a":1,"b":2}`)
	for i, wantKind := range []string{"", "", "repeated_call", "", "limit_exceeded"} {
		a := args
		if i == 3 {
			a = json.RawMessage(`{"b":2, "a":1}`) // different arguments
		}
		if i == 2 {
			a = json.RawMessage(`{ "a" : 1, "b" : 2 }`) // same arguments, other spacing
		}
		out := set.Invoke(context.Background(), r, Call{ID: "c", Name: "add", Args: a, Announced: true})
		if out.Kind != wantKind {
			t.Fatalf("call %d: kind %q (%s), want %q", i, out.Kind, out.Content, wantKind)
		}
	}
	for _, ty := range rec.Types() {
		if ty != events.ToolCallResult {
			t.Fatalf("announced call re-announced: %v", rec.Types())
		}
	}
}

func TestInvokeMetrics(t *testing.T) {
	set := testSet(t, adder())
	before := testutil.ToFloat64(metrics.ToolCalls.WithLabelValues("add", "error"))
	set.Invoke(context.Background(), &Run{Sink: events.Discard}, Call{ID: "x", Name: "add", Args: json.RawMessage(`{}`)})
	if got := testutil.ToFloat64(metrics.ToolCalls.WithLabelValues("add", "error")); got != before+1 {
		t.Fatalf("error counter %v -> %v", before, got)
	}
}

func TestTruncate(t *testing.T) {
	s := strings.Repeat("é", 100)
	got, cut := truncate(s, 30)
	if !cut || !strings.Contains(got, "70 of 100 characters omitted") || !strings.HasPrefix(got, strings.Repeat("é", 20)) || !strings.HasSuffix(got, strings.Repeat("é", 10)) {
		t.Fatalf("%q", got)
	}
	if got, cut := truncate("short", 30); cut || got != "short" {
		t.Fatal("short string changed")
	}
}

func BenchmarkInvoke(b *testing.B) {
	echo := Func{Spec: Info{Name: "echo", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		Fn: func(_ context.Context, args json.RawMessage) (Result, error) { return Result{Text: "ok"}, nil }}
	set := testSet(b, echo)
	r := &Run{Sink: events.Discard, MaxOutput: 50000, Point: aspects.Point{RunID: "run"}}
	call := Call{ID: "call_1", Name: "echo", Args: json.RawMessage(`{"text":"hello"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		set.Invoke(ctx, r, call)
	}
}

// testTimeout gives the slow tool a short timeout; other tools have none,
// as builtins do by default.
func testTimeout(t Tool) Duration {
	if t.Info().Name == "slow" {
		return Duration(200 * time.Millisecond)
	}
	return 0
}
