package sandbox

import (
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
	b.ReportMetric(float64(len(plan.rules)), "rules")
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
}
