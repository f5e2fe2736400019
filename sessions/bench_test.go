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

// BenchmarkSessionLoad is what reading a session costs a turn.
func BenchmarkSessionLoad(b *testing.B) {
	for _, name := range benchStores {
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, name)
			ctx := context.Background()
			rec := NewRecord(Key{Agent: "bench", Scope: ScopeThread, Thread: "t"})
			rec.Messages = benchHistory()
			if err := s.Put(ctx, rec); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Get(ctx, rec.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSessionSave is what writing a turn costs (bolt: one synced
// transaction).
func BenchmarkSessionSave(b *testing.B) {
	for _, name := range benchStores {
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, name)
			ctx := context.Background()
			rec := NewRecord(Key{Agent: "bench", Scope: ScopeThread, Thread: "t"})
			rec.Messages = benchHistory()
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Put(ctx, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSessionTurn is a whole turn's session work around a run: lease,
// read, reconcile, budget, repair, keep the added messages, write, release.
func BenchmarkSessionTurn(b *testing.B) {
	for _, name := range benchStores {
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, name)
			ctx := context.Background()
			cfg := &Config{Scope: ScopeThread, Agent: "bench", Memory: PolicyFull, Budget: Budget{MaxMessages: 24}}
			key := Key{Agent: "bench", Scope: ScopeThread, Thread: "t"}
			rec := NewRecord(key)
			rec.Messages = benchHistory()
			if err := s.Put(ctx, rec); err != nil {
				b.Fatal(err)
			}
			in := []events.Message{{Role: events.RoleUser, Content: "and the next question?"}}
			added := []events.Message{{ID: "x", Role: events.RoleAssistant, Content: "the next answer."}}
			emit := func(events.Event) {}
			b.ReportAllocs()
			for b.Loop() {
				c, err := Begin(ctx, s, cfg, key, in, Run{RunID: "run-bench"})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Recall(ctx, nil, emit); err != nil {
					b.Fatal(err)
				}
				if err := c.Keep(ctx, added, nil, emit); err != nil {
					b.Fatal(err)
				}
				c.Release()
			}
		})
	}
}
