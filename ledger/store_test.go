package ledger

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/redistest"
	"github.com/ruleagent/ruleagent/sessions"
)

// stores returns every Store implementation, each fresh: memory, bolt
// (beside the sessions, as the server keeps it) and a real redis-server.
func stores(t *testing.T) map[string]Store {
	t.Helper()
	bs, err := sessions.OpenBolt(filepath.Join(t.TempDir(), "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	bolt, err := StoreFor(bs, 0)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := sessions.OpenRedis(context.Background(), redistest.Start(t).URL+"?prefix=t1:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	redis, err := StoreFor(rs, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Store{"memory": NewMemory(), "bolt": bolt, "redis": redis}
}

func llmRec(at time.Time, run, user, chain string, in, out int64, cost Nanos) Record {
	return Record{Kind: KindLLM, Time: at, RunID: run, UserID: user, ChainID: chain, Model: "m", InputTokens: in, OutputTokens: out,
		Cost: cost, Price: "m", DurationMs: 5}
}

func TestStoresKeepRecordsAndDayTotals(t *testing.T) {
	ctx := context.Background()
	d1 := time.Date(2026, 11, 26, 23, 59, 0, 0, time.UTC)
	d2 := time.Date(2026, 11, 27, 0, 1, 0, 0, time.UTC)
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			batch := []Record{
				llmRec(d1, "r1", "alice", "c1", 10, 5, 100),
				llmRec(d2, "r1", "alice", "c1", 20, 7, 200),
				{Kind: KindTool, Time: d2, RunID: "r1", UserID: "alice", ChainID: "c1", Tool: "read", ToolType: "builtin", DurationMs: 12, IsError: true},
				llmRec(d2, "r2", "bob:x", "c2", 1, 1, 0),
			}
			if err := s.Append(ctx, Batch{Writer: "w1", Seq: 1, Records: batch[:2]}); err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, Batch{Writer: "w1", Seq: 2, Records: batch[2:]}); err != nil {
				t.Fatal(err)
			}
			var seen []Record
			if err := s.Scan(ctx, "2026-11-25", "2026-11-28", func(r *Record) bool { seen = append(seen, *r); return true }); err != nil {
				t.Fatal(err)
			}
			if len(seen) != 4 || seen[0].RunID != "r1" || seen[0].Time.Day() != 26 || seen[2].Tool != "read" || !seen[2].IsError || seen[3].UserID != "bob:x" {
				t.Fatalf("scan = %+v", seen)
			}
			tot, applied, err := s.DayTotals(ctx, "w1", []DayKey{{"2026-11-27", DimUser, "alice"}, {"2026-11-27", DimChain, "c1"},
				{"2026-11-26", DimUser, "alice"}, {"2026-11-27", DimUser, "bob:x"}, {"2026-11-27", DimUser, "nobody"}})
			if err != nil || applied != 2 {
				t.Fatalf("totals: applied %d, %v", applied, err)
			}
			if _, other, err := s.DayTotals(ctx, "w2", nil); err != nil || other != 0 {
				t.Fatalf("another writer's last batch: %d %v", other, err)
			}
			want := Totals{Calls: 1, InputTokens: 20, OutputTokens: 7, TotalTokens: 27, Cost: 200, LLMMs: 5, ToolCalls: 1, ToolErrors: 1, ToolMs: 12}
			if tot[0] != want || tot[1] != want {
				t.Fatalf("day totals of alice and c1 = %+v, %+v; want %+v", tot[0], tot[1], want)
			}
			if tot[2].TotalTokens != 15 || tot[3].TotalTokens != 2 || tot[4] != (Totals{}) {
				t.Fatalf("other totals: %+v", tot[2:])
			}
			// Stopping early stops.
			n := 0
			_ = s.Scan(ctx, "2026-11-26", "2026-11-27", func(*Record) bool { n++; return false })
			if n != 1 {
				t.Fatalf("scan went on after false: %d", n)
			}
			if err := s.Prune(ctx, "2026-11-27"); err != nil {
				t.Fatal(err)
			}
			if name == "redis" {
				return // Redis expires days by itself
			}
			seen = nil
			_ = s.Scan(ctx, "2026-11-25", "2026-11-28", func(r *Record) bool { seen = append(seen, *r); return true })
			tot, _, _ = s.DayTotals(ctx, "w1", []DayKey{{"2026-11-26", DimUser, "alice"}, {"2026-11-27", DimUser, "alice"}})
			if len(seen) != 3 || tot[0] != (Totals{}) || tot[1].TotalTokens != 27 {
				t.Fatalf("after prune: %d records, totals %+v", len(seen), tot)
			}
		})
	}
}
