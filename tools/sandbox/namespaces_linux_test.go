package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNamespacesUnavailableIsExplained: when the kernel refuses the
// namespaces, the status says so and names the system setting that
// forbids them, instead of blaming the user; the refusal is simulated by
// the probe hook, the settings by a fake /proc/sys.
func TestNamespacesUnavailableIsExplained(t *testing.T) {
	requireLandlock(t)
	oldProbe, oldSys, oldEuid := namespaceProbe, procSys, geteuid
	t.Cleanup(func() { namespaceProbe, procSys, geteuid = oldProbe, oldSys, oldEuid })
	namespaceProbe = func() error { return &os.SyscallError{Syscall: "clone", Err: unix.EPERM} }
	geteuid = func() int { return 1000 }
	for _, tc := range []struct {
		settings map[string]string
		want     string
	}{
		{map[string]string{"kernel/unprivileged_userns_clone": "0", "user/max_user_namespaces": "1000"}, "kernel.unprivileged_userns_clone=0"},
		{map[string]string{"user/max_user_namespaces": "0"}, "user.max_user_namespaces=0"},
		{map[string]string{"kernel/apparmor_restrict_unprivileged_userns": "1", "user/max_user_namespaces": "1000"}, "AppArmor restricts unprivileged user namespaces"},
		{map[string]string{"user/max_user_namespaces": "1000"}, "user namespaces could not be set up (clone: operation not permitted)"},
	} {
		procSys = t.TempDir()
		for name, v := range tc.settings {
			p := filepath.Join(procSys, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		st := describeSystem()
		if st.Namespaces || strings.Contains(st.Mechanism, "namespaces") {
			t.Errorf("%v: namespaces reported although the probe failed: %+v", tc.settings, st)
		}
		if !strings.Contains(st.Reason, tc.want) || !strings.Contains(st.Reason, "no namespaces") {
			t.Errorf("%v: reason %q should contain %q", tc.settings, st.Reason, tc.want)
		}
	}
	geteuid = func() int { return 0 }
	if st := describeSystem(); !strings.Contains(st.Reason, "even as root") {
		t.Errorf("as root: %q", st.Reason)
	}
}
