package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// BenchmarkRulesetPerRun measures what a run's first command pays for its
// Landlock ruleset: every rule, the read-only trees granted around the
// withheld system paths (the plan is made once and reused while its
// directories do not change).
func BenchmarkRulesetPerRun(b *testing.B) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		b.Skip("no Landlock")
	}
	spec := Spec{Workspace: b.TempDir(), TmpRoot: b.TempDir(), Network: NetworkOff,
		Exec: append([]string{"/bin/sh"}, Loaders("/bin/sh")...), Withheld: systemWithheld()}
	plan := newReadPlan(&spec)
	b.ResetTimer()
	for b.Loop() {
		if !plan.current() {
			b.Fatal("the plan went stale")
		}
		fd, err := buildRuleset(&spec, abi, spec.TmpRoot, plan)
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
	// After the loop: ResetTimer drops the metrics reported before it.
	b.ReportMetric(float64(len(plan.rules)), "rules")
}

// BenchmarkRulesetPerRunAroundServerPaths is BenchmarkRulesetPerRun for a
// workspace that holds the server's chains folder and data directory
// (a workspace of "."), granted entry by entry around them: a project
// with 30 top-level entries.
func BenchmarkRulesetPerRunAroundServerPaths(b *testing.B) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		b.Skip("no Landlock")
	}
	ws := b.TempDir()
	for i := range 30 {
		name := filepath.Join(ws, fmt.Sprintf("entry%02d", i))
		if i%2 == 0 {
			err = os.Mkdir(name, 0o755)
		} else {
			err = os.WriteFile(name, nil, 0o644)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, d := range []string{"chains", "data"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	spec := Spec{Workspace: ws, TmpRoot: b.TempDir(), Network: NetworkOff,
		Exec: append([]string{"/bin/sh"}, Loaders("/bin/sh")...), Withheld: systemWithheld(),
		Protected: []string{filepath.Join(ws, "chains")}, Secret: []string{filepath.Join(ws, "data")}}
	plan := newReadPlan(&spec)
	b.ResetTimer()
	for b.Loop() {
		if !plan.current() {
			b.Fatal("the plan went stale")
		}
		fd, err := buildRuleset(&spec, abi, spec.TmpRoot, plan)
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
	// After the loop: ResetTimer drops the metrics reported before it.
	b.ReportMetric(float64(len(plan.rules)), "rules")
}
