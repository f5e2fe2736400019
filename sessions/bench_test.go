package sessions

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/events"
)

// benchStores are the stores make bench measures: those in the process
// (Redis costs a network round trip, measured by its own deployment).
var benchStores = []string{"memory", "bolt"}

// benchStore opens a fresh store of a kind for one benchmark run.
func benchStore(b *testing.B, kind string) Store {
	if kind == "memory" {
		return NewMemory()
	}
	bs, err := OpenBolt(filepath.Join(b.TempDir(), "s.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bs.Close() })
	return bs
}

// benchHistory is a 20-message history of ordinary length: ten turns of a
// user question and an answer, every other answer with a tool round.
func benchHistory() []events.Message {
	var out []events.Message
	text := strings.Repeat("a sentence of an ordinary chat message. ", 5)
	for i := range 10 {
		out = append(out, events.Message{ID: fmt.Sprintf("u%d", i), Role: events.RoleUser, Content: text})
		if i%2 == 0 {
			id := fmt.Sprintf("c%d", i)
			out = append(out, events.Message{ID: fmt.Sprintf("a%d", i), Role: events.RoleAssistant,
				ToolCalls: []events.ToolCall{{ID: id, Name: "lookup", Arguments: `{"key":"A-1"}`}}},
				events.Message{Role: events.RoleTool, ToolCallID: id, Content: text})
		}
		out = append(out, events.Message{ID: fmt.Sprintf("b%d", i), Role: events.RoleAssistant, Content: text})
	}
	return out
}

// benchRecord stores a session holding benchHistory in s.
func benchRecord(b *testing.B, s Store) *Record {
	rec := NewRecord(Key{Agent: "bench", Scope: ScopeThread, Thread: "t"})
	rec.Messages = benchHistory()
	if err := s.Put(context.Background(), rec); err != nil {
		b.Fatal(err)
	}
	return rec
}

// benchEach runs op as a benchmark on each store, holding benchHistory.
func benchEach(b *testing.B, op func(ctx context.Context, s Store, rec *Record) error) {
	for _, name := range benchStores {
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, name)
			rec := benchRecord(b, s)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := op(ctx, s, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSessionLoad is what reading a session costs a turn.
func BenchmarkSessionLoad(b *testing.B) {
	benchEach(b, func(ctx context.Context, s Store, rec *Record) error {
		_, err := s.Get(ctx, rec.ID)
		return err
	})
}

// BenchmarkSessionSave is what writing a turn costs (bolt: one synced
// transaction).
func BenchmarkSessionSave(b *testing.B) {
	benchEach(b, func(ctx context.Context, s Store, rec *Record) error { return s.Put(ctx, rec) })
}

// BenchmarkSessionTurn is a whole turn's session work around a run: lease,
// read, reconcile, budget, repair, keep the added messages, write, release.
func BenchmarkSessionTurn(b *testing.B) {
	cfg := &Config{Scope: ScopeThread, Agent: "bench", Memory: PolicyFull, Budget: Budget{MaxMessages: 24}}
	in := []events.Message{{Role: events.RoleUser, Content: "and the next question?"}}
	added := []events.Message{{ID: "x", Role: events.RoleAssistant, Content: "the next answer."}}
	emit := func(events.Event) {}
	benchEach(b, func(ctx context.Context, s Store, rec *Record) error {
		c, err := Begin(ctx, s, cfg, rec.Key(), in, Run{RunID: "run-bench"})
		if err != nil {
			return err
		}
		defer c.Release()
		if _, err := c.Recall(ctx, nil, emit); err != nil {
			return err
		}
		return c.Keep(ctx, added, nil, emit)
	})
}
