package bash

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// BenchmarkSandboxCost measures what the kernel sandbox adds to a bash
// call of a trivial command (policy check included). Each iteration makes
// one unconfined and one confined call, so that both see the same load;
// it reports the median of each (unconfined-ms, confined-ms) and the
// median of the per-pair differences (added-ms), the figure the README
// states. The helper's start-up is paid before the timer starts, as a
// server pays it once per tool.
func BenchmarkSandboxCost(b *testing.B) {
	if st := sandbox.Describe(); !st.Available {
		b.Skipf("the kernel cannot confine commands here: %s", st.Reason)
	}
	off, on := newTool(b, `{"sandbox":"off"}`), newTool(b, `{"sandbox":"required"}`)
	raw, _ := json.Marshal(map[string]any{"command": "true"})
	call := func(t *Tool) time.Duration {
		start := time.Now()
		res, err := t.Call(b.Context(), raw)
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("%v %s", err, res.Text)
		}
		return d
	}
	call(off)
	call(on)
	var offs, ons, diffs []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o, c := call(off), call(on)
		offs, ons, diffs = append(offs, o), append(ons, c), append(diffs, c-o)
	}
	b.StopTimer()
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	b.ReportMetric(median(offs), "unconfined-ms")
	b.ReportMetric(median(ons), "confined-ms")
	b.ReportMetric(median(diffs), "added-ms")
}

// BenchmarkSandboxRunCost measures what the first command of a run pays
// beyond the next ones: its Landlock ruleset (the read-only trees granted
// around the withheld system paths), its private temporary directory and
// its confined thread. Each iteration is the first call of a new run
// followed by a second call of the same run; it reports the medians of
// both and of their differences (first-extra-ms).
func BenchmarkSandboxRunCost(b *testing.B) {
	if st := sandbox.Describe(); !st.Available {
		b.Skipf("the kernel cannot confine commands here: %s", st.Reason)
	}
	on := newTool(b, `{"sandbox":"required"}`)
	raw, _ := json.Marshal(map[string]any{"command": "true"})
	call := func(run string) time.Duration {
		ctx := tools.WithCall(b.Context(), &tools.CallInfo{RunID: run})
		start := time.Now()
		res, err := on.Call(ctx, raw)
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("%v %s", err, res.Text)
		}
		return d
	}
	call("warm-up")
	var firsts, nexts, diffs []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run := "run-" + strconv.Itoa(i)
		f, n := call(run), call(run)
		firsts, nexts, diffs = append(firsts, f), append(nexts, n), append(diffs, f-n)
	}
	b.StopTimer()
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	b.ReportMetric(median(firsts), "first-ms")
	b.ReportMetric(median(nexts), "next-ms")
	b.ReportMetric(median(diffs), "first-extra-ms")
}
