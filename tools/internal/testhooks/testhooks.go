// Package testhooks holds the switches tests use to take one layer of the
// tools away and show what the next layer alone stops (the kernel sandbox
// without the bash command policy). It is internal to tools/: production
// code outside the tools cannot import it, and nothing in production calls
// it. Package bash installs its switch when it is initialised.
package testhooks

// TB is the part of testing.TB the hooks need.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// bashPolicyOff switches a bash tool's command policy off and returns what
// switches it back on; package bash sets it.
var bashPolicyOff func(tool any) (restore func(), ok bool)

// InstallBashPolicySwitch is called once, by package bash's init.
func InstallBashPolicySwitch(f func(tool any) (restore func(), ok bool)) { bashPolicyOff = f }

// DisableBashPolicy switches the command policy of a bash tool off for the
// rest of the test, so that only the kernel sandbox stands between a
// command and its effect.
func DisableBashPolicy(tb TB, tool any) {
	tb.Helper()
	if bashPolicyOff == nil {
		tb.Fatalf("package bash is not linked into this test")
		return
	}
	restore, ok := bashPolicyOff(tool)
	if !ok {
		tb.Fatalf("%T is not a bash tool", tool)
		return
	}
	tb.Cleanup(restore)
}
