package ledger

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/sessions"
)

// BenchmarkLedgerRun is the ledger's cost for one 4-turn, 3-tool run, as
// the server records it: a recorder, four LLM calls priced and queued,
// three tool calls queued.
//
//   - path: what the run itself pays (the writer works beside it, into a
//     store that keeps nothing here, so that it keeps up with the loop);
//   - path+budgets: the same with a user and a chain budget checked
//     before each LLM call (four reads of a bbolt store the writer
//     writes to at the same time);
//   - written/bolt: everything, the run's records written in a batch of
//     their own (one synced bbolt transaction per run: the worst case;
//     runs that end together share one).
func BenchmarkLedgerRun(b *testing.B) {
	prices, err := ParsePrices([]byte(`{"models": [{"model": "gpt-4o-mini*", "input": 0.15, "cachedInput": 0.075, "output": 0.6}]}`))
	if err != nil {
		b.Fatal(err)
	}
	budgets, err := ParseBudgets([]byte(`{"users": {"*": {"tokensPerDay": 1000000000000}}, "chains": {"*": {"costPerDay": "1000000"}}}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		budgets *Budgets
		flush   bool
		bolt    bool
	}{{"path", nil, false, false}, {"path+budgets", budgets, false, true}, {"written/bolt", nil, true, true}} {
		b.Run(c.name, func(b *testing.B) {
			var st Store = discard{NewMemory()}
			if c.bolt {
				sess, err := sessions.OpenBolt(filepath.Join(b.TempDir(), "sessions.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer sess.Close()
				st, _ = StoreFor(sess, 0)
			}
			l, err := New(Options{Store: st, Prices: prices, Budgets: c.budgets, QueueSize: 1 << 16})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			u := aspects.Usage{PromptTokens: 1200, CachedTokens: 400, CompletionTokens: 150}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				run := l.Run(RunInfo{RunID: "run-1", ChainID: "support", ThreadID: "t-1", UserID: []string{"alice", "bob"}[i%2], Source: "agui"})
				root := agent.NewRecordingLedger(run)
				for step := 1; step <= 4; step++ {
					if err := root.Admit(ctx); err != nil {
						b.Fatal(err)
					}
					root.AddCall(agent.LLMCall{Provider: "api.openai.com", Model: "gpt-4o-mini-2024-07-18", Usage: u, RunID: "run-1",
						ChainID: "support", NodeID: "agent", Step: step, Duration: 800 * time.Millisecond})
					if step < 4 {
						root.Tool(agent.ToolCallUse{RunID: "run-1", ChainID: "support", NodeID: "agent", Step: step, ToolCallID: "call_1",
							Name: "lookup", Type: "rulechain", Duration: 3 * time.Millisecond})
					}
				}
				_ = root.Entries()
				_, _ = run.SegmentCost()
				if c.flush {
					if err := l.Flush(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			_ = l.Flush(ctx)
		})
	}
}

// discard is a store that keeps nothing.
type discard struct{ *Memory }

func (discard) Append(context.Context, Batch) error { return nil }
