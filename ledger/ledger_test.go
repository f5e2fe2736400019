package ledger

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/limits"
)

func testPrices(t *testing.T) *Prices {
	t.Helper()
	p, err := ParsePrices([]byte(`{"currency": "USD", "models": [{"model": "m*", "input": 1, "output": 2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newTestLedger(t *testing.T, o Options) *Ledger {
	t.Helper()
	if o.Store == nil {
		o.Store = NewMemory()
	}
	l, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// TestSubagentCallsCountOnce: a sub-agent's ledger adds up into its
// caller's (AG-UI: sub-agent calls count in the parent's usage), and the
// recorder on the root sees each call once.
func TestSubagentCallsCountOnce(t *testing.T) {
	l := newTestLedger(t, Options{Prices: testPrices(t)})
	run := l.Run(RunInfo{RunID: "run-1", ChainID: "parent", ThreadID: "t", UserID: "alice", Source: "agui"})
	root := agent.NewRecordingLedger(run)
	parent := agent.NewLedger(root)
	sub := agent.NewLedger(parent)
	cost, cur := parent.AddCall(agent.LLMCall{Provider: "p", Model: "m1", Usage: aspects.Usage{PromptTokens: 1000, CompletionTokens: 500},
		RunID: "run-1", ChainID: "parent", Step: 1})
	if cost != "0.002" || cur != "USD" {
		t.Fatalf("cost %q %q, want 0.002 USD", cost, cur)
	}
	sub.AddCall(agent.LLMCall{Provider: "p", Model: "m1", Usage: aspects.Usage{PromptTokens: 100, CompletionTokens: 10},
		RunID: "sub-1", ParentRunID: "run-1", ChainID: "helper", Step: 1})
	sub.Tool(agent.ToolCallUse{RunID: "sub-1", ChainID: "helper", Name: "read", Type: "builtin", Duration: 3 * time.Millisecond})
	// ai/intent adds without an agent run.
	agent.LedgerFrom(agent.WithLedger(context.Background(), sub)).Add("p", "other", aspects.Usage{PromptTokens: 7, CompletionTokens: 1})

	if got := root.Total(); got.PromptTokens != 1107 || got.CompletionTokens != 511 {
		t.Fatalf("root usage %+v", got)
	}
	rep, err := l.Query(context.Background(), Query{Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Hour), By: []string{"run"}})
	if err != nil {
		t.Fatal(err)
	}
	tot := rep.Total
	if tot.Calls != 3 || tot.InputTokens != 1107 || tot.OutputTokens != 511 || tot.ToolCalls != 1 || tot.Unpriced != 1 {
		t.Fatalf("ledger total %+v", tot)
	}
	// 1100 × 1 + 510 × 2 per million = 0.00212; the unpriced call adds nothing.
	if tot.Cost.String() != "0.00212" || len(rep.Groups) != 1 || rep.Groups[0].Key["run"] != "run-1" {
		t.Fatalf("cost %s, groups %+v", tot.Cost, rep.Groups)
	}
	if c, _ := run.SegmentCost(); c != "0.00212" {
		t.Fatalf("segment cost %q", c)
	}
	var recs []Record
	_ = l.store.Scan(context.Background(), dayOf(time.Now()), dayOf(time.Now()), func(r *Record) bool { recs = append(recs, *r); return true })
	if len(recs) != 4 || recs[0].AgentRunID != "" || recs[1].AgentRunID != "sub-1" || recs[1].AgentChainID != "helper" ||
		recs[1].ChainID != "parent" || recs[1].UserID != "alice" || recs[2].Tool != "read" || recs[3].Model != "other" {
		t.Fatalf("records %+v", recs)
	}
}

// TestResumedRunReportsUnderItsNewID: after Segment, calls are recorded
// under the resumed run's id and the segment's cost starts again.
func TestResumedRunReportsUnderItsNewID(t *testing.T) {
	l := newTestLedger(t, Options{Prices: testPrices(t)})
	run := l.Run(RunInfo{RunID: "run-1", ChainID: "c"})
	root := agent.NewRecordingLedger(run)
	root.AddCall(agent.LLMCall{Model: "m", Usage: aspects.Usage{PromptTokens: 1_000_000}, RunID: "run-1", ChainID: "c"})
	run.Segment("run-2")
	if c, _ := run.SegmentCost(); c != "" {
		t.Fatalf("a new segment starts with no cost, got %q", c)
	}
	root.AddCall(agent.LLMCall{Model: "m", Usage: aspects.Usage{CompletionTokens: 1_000_000}, RunID: "run-1", ChainID: "c"})
	if c, cur := run.SegmentCost(); c != "2" || cur != "USD" {
		t.Fatalf("segment cost %q %q", c, cur)
	}
	rep, err := l.Query(context.Background(), Query{Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Hour), By: []string{"run"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) != 2 || rep.Groups[0].Key["run"] != "run-2" || rep.Groups[0].Cost.String() != "2" || rep.Groups[1].Cost.String() != "1" {
		t.Fatalf("groups %+v", rep.Groups)
	}
}

// TestBudgetCountsQueuedRecords: a budget check counts what is written
// and what still waits for the writer, never twice.
func TestBudgetCountsQueuedRecords(t *testing.T) {
	hold := make(chan struct{})
	b, err := ParseBudgets([]byte(`{"users": {"*": {"tokensPerDay": 100}}, "chains": {"big": {"costPerDay": "0.001"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	l := newTestLedger(t, Options{Prices: testPrices(t), Budgets: b})
	l.beforeWrite = func() { <-hold }
	ctx := context.Background()
	alice := agent.NewRecordingLedger(l.Run(RunInfo{RunID: "a", ChainID: "small", UserID: "alice"}))
	bob := agent.NewRecordingLedger(l.Run(RunInfo{RunID: "b", ChainID: "small", UserID: "bob"}))
	alice.AddCall(agent.LLMCall{Model: "m", Usage: aspects.Usage{PromptTokens: 60, CompletionTokens: 40}})
	// The writer is held: the record is pending, and counts.
	err = alice.Admit(ctx)
	var re *agent.RunError
	var ex *limits.Exceeded
	if !errors.As(err, &re) || re.Code != agent.CodeLimit || re.Limit != LimitUserTokens || !errors.As(err, &ex) || ex.Used != 100 || !errors.Is(err, tools.ErrLimitExceeded) {
		t.Fatalf("alice over budget: %v (%+v)", err, re)
	}
	if err := bob.Admit(ctx); err != nil {
		t.Fatalf("bob refused: %v", err)
	}
	close(hold)
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Written, and no longer pending: counted once.
	err = alice.Admit(ctx)
	if !errors.As(err, &ex) || ex.Used != 100 {
		t.Fatalf("after the write: %v", err)
	}
	// A chain's cost budget.
	big := agent.NewRecordingLedger(l.Run(RunInfo{RunID: "c", ChainID: "big"}))
	if err := big.Admit(ctx); err != nil {
		t.Fatal(err)
	}
	big.AddCall(agent.LLMCall{Model: "m", Usage: aspects.Usage{PromptTokens: 1000}}) // 0.001
	if err := big.Admit(ctx); !errors.As(err, &re) || re.Limit != LimitChainCost {
		t.Fatalf("chain cost budget: %v", err)
	}
}

type slowStore struct {
	*Memory
	hold chan struct{}
}

func (s *slowStore) Append(ctx context.Context, b Batch) error {
	<-s.hold
	return s.Memory.Append(ctx, b)
}

type failingStore struct{ *Memory }

func (failingStore) DayTotals(context.Context, string, []DayKey) ([]Totals, uint64, error) {
	return nil, 0, errors.New("store down")
}

// TestBudgetCheckDoesNotWaitForAWrite: a check while the writer is stuck
// in a write (a slow disk, a slow Redis) answers at once, counting the
// batch being written; once written, it is counted once.
func TestBudgetCheckDoesNotWaitForAWrite(t *testing.T) {
	hold := make(chan struct{})
	b, _ := ParseBudgets([]byte(`{"users": {"*": {"tokensPerDay": 1000}}}`))
	l := newTestLedger(t, Options{Store: &slowStore{Memory: NewMemory(), hold: hold}, Budgets: b})
	root := agent.NewRecordingLedger(l.Run(RunInfo{UserID: "u"}))
	root.AddCall(agent.LLMCall{Model: "m", Usage: aspects.Usage{PromptTokens: 600}})
	// The writer takes the record and blocks in the store.
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.un.bmu.RLock()
		n := len(l.un.batches)
		l.un.bmu.RUnlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer never took the record")
		}
		time.Sleep(time.Millisecond)
	}
	root.AddCall(agent.LLMCall{Model: "m", Usage: aspects.Usage{PromptTokens: 300}})
	checked := make(chan error, 1)
	go func() { checked <- root.Admit(context.Background()) }()
	select {
	case err := <-checked:
		if err != nil {
			t.Fatalf("900 of 1000 tokens refused: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the budget check waited for the write in progress")
	}
	root.AddCall(agent.LLMCall{Model: "m", Usage: aspects.Usage{PromptTokens: 100}})
	var ex *limits.Exceeded
	if err := root.Admit(context.Background()); !errors.As(err, &ex) || ex.Used != 1000 {
		t.Fatalf("1000 of 1000: %v", err)
	}
	close(hold)
	_ = l.Flush(context.Background())
	if err := root.Admit(context.Background()); !errors.As(err, &ex) || ex.Used != 1000 {
		t.Fatalf("after the writes, 1000 of 1000 counted once: %v", err)
	}
}

// TestBudgetCountIsExactWhileWriting checks, after each of many calls
// and while the writer writes them in batches beside, that a check counts
// every call exactly once.
func TestBudgetCountIsExactWhileWriting(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			b, _ := ParseBudgets([]byte(`{"users": {"*": {"tokensPerDay": 1000000000}}}`))
			l := newTestLedger(t, Options{Store: st, Budgets: b})
			root := agent.NewRecordingLedger(l.Run(RunInfo{UserID: "exact-" + name, ChainID: "c"}))
			keys := []DayKey{{dayOf(time.Now()), DimUser, "exact-" + name}}
			for i := 1; i <= 300; i++ {
				root.AddCall(agent.LLMCall{Model: "m", Usage: aspects.Usage{PromptTokens: 2, CompletionTokens: 1}})
				got, err := l.un.count(keys, func() ([]Totals, uint64, error) { return l.store.DayTotals(context.Background(), l.id, keys) })
				if err != nil {
					t.Fatal(err)
				}
				if got[0].TotalTokens != int64(3*i) {
					t.Fatalf("after %d calls a check counts %d tokens, want %d", i, got[0].TotalTokens, 3*i)
				}
			}
		})
	}
}

// TestBudgetThatCannotBeCheckedRefuses: a budget never opens by accident.
func TestBudgetThatCannotBeCheckedRefuses(t *testing.T) {
	b, _ := ParseBudgets([]byte(`{"users": {"alice": {"tokensPerDay": 100}}}`))
	l := newTestLedger(t, Options{Store: failingStore{NewMemory()}, Budgets: b})
	err := agent.NewRecordingLedger(l.Run(RunInfo{UserID: "alice"})).Admit(context.Background())
	var re *agent.RunError
	if !errors.As(err, &re) || re.Code != agent.CodeLimit || !errors.Is(err, tools.ErrLimitExceeded) {
		t.Fatalf("err = %v", err)
	}
	// Users without a budget are not checked at all.
	if err := agent.NewRecordingLedger(l.Run(RunInfo{UserID: "bob"})).Admit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestParseBudgetsRefusesMistakes(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"users": {"a": {}}}`, "users.a: set tokensPerDay or costPerDay"},
		{`{"users": {"a": {"costPerDay": "x"}}}`, "users.a.costPerDay"},
		{`{"chains": {"a": {"tokensPerDay": -1}}}`, "chains.a.tokensPerDay"},
		{`{"user": {}}`, "unknown field"},
		{`{}`, "no budgets"},
	} {
		if _, err := ParseBudgets([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.doc, err, c.want)
		}
	}
	b, _ := ParseBudgets([]byte(`{"users": {"*": {"costPerDay": "1"}}}`))
	if _, err := New(Options{Store: NewMemory(), Budgets: b}); err == nil || !strings.Contains(err.Error(), "needs a price table") {
		t.Fatalf("a cost budget without prices: %v", err)
	}
}

// TestQueueFullDropsAndCounts: a record that finds no room in time is
// dropped, not waited for, and no longer counts in budgets.
func TestQueueFullDropsAndCounts(t *testing.T) {
	hold := make(chan struct{})
	b, _ := ParseBudgets([]byte(`{"users": {"*": {"tokensPerDay": 1000}}}`))
	l := newTestLedger(t, Options{Store: &slowStore{Memory: NewMemory(), hold: hold}, Budgets: b, QueueSize: 1, MaxWait: time.Millisecond})
	root := agent.NewRecordingLedger(l.Run(RunInfo{UserID: "u"}))
	for range 5 {
		root.AddCall(agent.LLMCall{Model: "m", Usage: aspects.Usage{PromptTokens: 1}})
	}
	close(hold)
	_ = l.Flush(context.Background())
	tot, _, _ := l.store.DayTotals(context.Background(), l.id, []DayKey{{dayOf(time.Now()), DimUser, "u"}})
	if tot[0].Calls < 1 || tot[0].Calls > 3 {
		t.Fatalf("with a queue of one and a held writer, %d of 5 records were kept", tot[0].Calls)
	}
	l.un.qmu.Lock()
	queued := len(l.un.queued)
	l.un.qmu.Unlock()
	l.un.bmu.Lock()
	batches := len(l.un.batches)
	l.un.bmu.Unlock()
	if queued != 0 || batches != 0 {
		t.Fatalf("dropped or written records still counted apart: %d queued, %d batches", queued, batches)
	}
}

// TestConcurrentRunsAddUp: many runs recording at once lose nothing.
func TestConcurrentRunsAddUp(t *testing.T) {
	l := newTestLedger(t, Options{Prices: testPrices(t)})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			root := agent.NewRecordingLedger(l.Run(RunInfo{RunID: "r", UserID: []string{"a", "b"}[i%2]}))
			for range 20 {
				root.AddCall(agent.LLMCall{Model: "m", Usage: aspects.Usage{PromptTokens: 3, CompletionTokens: 2}})
			}
		}()
	}
	wg.Wait()
	rep, err := l.Query(context.Background(), Query{Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Hour), By: []string{"user"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total.Calls != 1000 || rep.Total.TotalTokens != 5000 || len(rep.Groups) != 2 || rep.Groups[0].Calls != 500 {
		t.Fatalf("report %+v", rep)
	}
	if rep.Total.Cost.String() != "0.007" { // 1000 × (3 × 1 + 2 × 2) per million
		t.Fatalf("cost %s", rep.Total.Cost)
	}
}
