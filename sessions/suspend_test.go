package sessions

import (
	"context"
	"errors"
	"testing"

	"github.com/ruleagent/ruleagent/events"
)

// A run that pauses gives its session back with a Snapshot; resumed, it
// keeps its turn as if it had not paused: on a new session and on one
// with history. A session written while the run was paused is not
// overwritten (ErrMoved), nor is one another run holds (ErrBusy).
func TestResumeKeepsThePausedTurn(t *testing.T) {
	ctx := context.Background()
	s := NewMemory()
	cfg := &Config{Scope: ScopeThread, Agent: "a", Memory: PolicyFull}
	key := Key{Agent: "a", Scope: ScopeThread, Thread: "t"}
	emit := func(events.Event) {}
	pause := func(text string) *Snapshot {
		t.Helper()
		c, err := Begin(ctx, s, cfg, key, []events.Message{{Role: events.RoleUser, Content: text}}, Run{RunID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		if _, err := c.Recall(ctx, nil, emit); err != nil {
			t.Fatal(err)
		}
		return c.Snapshot()
	}
	resume := func(snap *Snapshot, answer string) error {
		c, err := Resume(ctx, s, cfg, snap, Run{RunID: "r"})
		if err != nil {
			return err
		}
		defer c.Release()
		return c.Keep(ctx, []events.Message{{Role: events.RoleAssistant, Content: answer}}, nil, emit)
	}
	for i, turn := range [][2]string{{"first", "one"}, {"second", "two"}} {
		if err := resume(pause(turn[0]), turn[1]); err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
	}
	rec, err := s.Get(ctx, key.ID())
	if err != nil || rec.Turns != 2 || len(rec.Messages) != 4 || rec.Messages[3].Content != "two" || rec.Messages[2].Content != "second" {
		t.Fatalf("the session: %+v %v", rec, err)
	}

	// Written meanwhile: the paused run's turn would lose that write.
	snap := pause("third")
	if err := resume(pause("fourth"), "four"); err != nil {
		t.Fatal(err)
	}
	if err := resume(snap, "three"); !errors.Is(err, ErrMoved) {
		t.Errorf("resuming on a session written meanwhile: %v", err)
	}
	// Held by another run.
	snap = pause("fifth")
	c, err := Begin(ctx, s, cfg, key, []events.Message{{Role: events.RoleUser, Content: "sixth"}}, Run{RunID: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if err := resume(snap, "five"); !errors.Is(err, ErrBusy) {
		t.Errorf("resuming on a session another run holds: %v", err)
	}
	c.Release()
}
