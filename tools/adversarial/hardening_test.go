package adversarial_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// The holes of issue 11 ("hardening of what exists"), replayed through the
// real bash tool and a real shell: each hostile command must be refused
// with its rule, and its effect must not have happened (a canary file not
// created or not changed, a secret not printed).

// canaryFixture is a workspace next to an "outside" directory holding a
// canary file with a secret.
type canaryFixture struct {
	ws, outside, canary, marker string
}

func newCanary(t *testing.T) canaryFixture {
	t.Helper()
	base := t.TempDir()
	f := canaryFixture{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	f.canary = filepath.Join(f.outside, "canary.txt")
	f.marker = filepath.Join(f.outside, "pwned")
	for _, err := range []error{
		os.MkdirAll(f.ws, 0o755),
		os.MkdirAll(f.outside, 0o755),
		os.WriteFile(f.canary, []byte(outsideSecret+"\n"), 0o644),
		os.WriteFile(filepath.Join(f.ws, "data.txt"), []byte("line one\nline two\n"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// expectRefusedWithoutEffect runs each command; it must be refused naming
// the rule, the marker must not exist, the canary must be intact and the
// secret must not appear in anything returned.
func (f canaryFixture) expectRefusedWithoutEffect(t *testing.T, tool tools.Tool, cases []hostileShellCase) {
	t.Helper()
	before := snapshot(t, filepath.Dir(f.ws))
	for _, tc := range cases {
		cmd := strings.NewReplacer("MARKER", f.marker, "OUTSIDE", f.outside, "CANARY", f.canary).Replace(tc.cmd)
		raw, _ := json.Marshal(map[string]any{"command": cmd})
		res, err := tool.Call(t.Context(), raw)
		switch {
		case err == nil:
			t.Errorf("%q: not refused; it ran: %s", cmd, res.Text)
		case !errors.Is(err, tools.ErrPolicyDenied):
			t.Errorf("%q: want a refusal by %q, got %v", cmd, tc.rule, err)
		case !strings.Contains(err.Error(), `rule "`+tc.rule+`"`):
			t.Errorf("%q: the refusal does not name rule %q:\n%v", cmd, tc.rule, err)
		}
		if err != nil {
			assertNoSecrets(t, err.Error())
		}
		assertNoSecrets(t, res.Text)
		if _, statErr := os.Stat(f.marker); statErr == nil {
			t.Fatalf("%q: the marker file was created", cmd)
		}
	}
	after := snapshot(t, filepath.Dir(f.ws))
	assertSame(t, before, after)
}

// touchAndCat is a stand-in for a dangerous program that the config denies:
// every case below tries to run touch (or cat on the canary) through
// something that hides it.
func TestAllowModeFunctionShadowing(t *testing.T) {
	f := newCanary(t)
	tool := newBashTool(t, map[string]any{"workDir": f.ws, "mode": "allow", "allow": []string{"echo", "true", "false", "ls", "unset"}})
	f.expectRefusedWithoutEffect(t, tool, []hostileShellCase{
		{"if false; then touch(){ :; }; fi; touch MARKER", "allow"},
		{"(touch(){ :; }); touch MARKER", "allow"},
		{"touch(){ :; }; unset -f touch; touch MARKER", "allow"},
		{"false && touch(){ :; }; touch MARKER", "allow"},
		{"cat(){ :; } & cat CANARY", "allow"},
	})
	// A function that is certainly defined still runs.
	raw, _ := json.Marshal(map[string]any{"command": "greet(){ echo hello-from-function; }; greet"})
	if res, err := tool.Call(t.Context(), raw); err != nil || !strings.Contains(res.Text, "hello-from-function") {
		t.Fatalf("a defined function should run: %v %s", err, res.Text)
	}
}

func TestDenyModeExecCapablePrograms(t *testing.T) {
	f := newCanary(t)
	tool := newBashTool(t, map[string]any{"workDir": f.ws, "deny": []string{"touch", "cat"}})
	cases := []hostileShellCase{
		{"sed -n '1e touch MARKER' data.txt", "launcher"},
		{"sed 's|line|touch MARKER|e' data.txt", "launcher"},
		{"tar -I 'touch MARKER' -cf a.tar data.txt", "deny"},
		{"tar -cf a.tar --checkpoint=1 --checkpoint-action=exec='touch MARKER' data.txt", "deny"},
		{"zip -T -TT 'touch MARKER' a.zip data.txt", "deny"},
		{"ssh -o ProxyCommand='touch MARKER' host", "deny"},
		{"setpriv --no-new-privs touch MARKER", "deny"},
		{"prlimit --nofile=64 touch MARKER", "deny"},
		{"chrt 0 touch MARKER", "deny"},
		{"strace -f -o /dev/null touch MARKER", "deny"},
		{"strace -o '|touch MARKER' true", "deny"},
		{"setarch x86_64 touch MARKER", "deny"},
		{"git -c core.pager='touch MARKER' log", "interpreters"},
		{"git -c alias.x='!touch MARKER' x", "interpreters"},
		{"awk 'BEGIN { system(\"touch MARKER\") }'", "interpreters"},
		{"python3 -c 'open(\"MARKER\", \"w\")'", "interpreters"},
		{"perl -e 'open(F, \">MARKER\")'", "interpreters"},
		{"vim -es -c '!touch MARKER' -c q", "interpreters"},
		{"GIT_PAGER='touch MARKER' git log", "interpreters"},
	}
	for _, loader := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"} {
		if _, err := os.Stat(loader); err == nil {
			cases = append(cases, hostileShellCase{loader + " /usr/bin/touch MARKER", "deny"})
		}
	}
	if _, err := exec.LookPath("gdb"); err == nil {
		cases = append(cases, hostileShellCase{"gdb -batch -ex 'shell touch MARKER'", "launcher"})
	}
	f.expectRefusedWithoutEffect(t, tool, cases)
}

func TestRecursiveChangesOutsideTheWorkspace(t *testing.T) {
	f := newCanary(t)
	tool := newBashTool(t, map[string]any{"workDir": f.ws})
	f.expectRefusedWithoutEffect(t, tool, []hostileShellCase{
		{"rm -r ../outside", "destructive"},
		{"rm -r OUTSIDE", "destructive"},
		{"cd .. && rm -r outside", "destructive"},
		{"mv CANARY ./stolen.txt", "destructive"},
		{"mv data.txt CANARY", "destructive"},
		{"chmod -R 000 OUTSIDE", "destructive"},
		{"chown -R nobody OUTSIDE", "destructive"},
	})
	// Inside the workspace the same commands work.
	raw, _ := json.Marshal(map[string]any{"command": "mkdir -p d/e && mv data.txt d/e/ && chmod -R u+w d && rm -r d && ls"})
	if res, err := tool.Call(t.Context(), raw); err != nil || !strings.Contains(res.Text, "exit code: 0") {
		t.Fatalf("recursive changes inside the workspace should run: %v %s", err, res.Text)
	}
}

func TestDenyArgsFollowCdAndSed(t *testing.T) {
	f := newCanary(t)
	tool := newBashTool(t, map[string]any{"workDir": f.ws, "denyArgs": []string{f.outside}})
	f.expectRefusedWithoutEffect(t, tool, []hostileShellCase{
		{"cat CANARY", "denyArgs"},
		{"cd OUTSIDE && cat canary.txt", "denyArgs"},
		{"cd OUTSIDE/.. && cat outside/canary.txt", "denyArgs"},
		{"sed -n 'w MARKER' data.txt", "denyArgs"},
		{"sed 's|line|x|w MARKER' data.txt", "denyArgs"},
		{"sed '1r CANARY' data.txt", "denyArgs"},
	})
}

func TestRefusalsDoNotQuotePatterns(t *testing.T) {
	f := newCanary(t)
	const pattern = "touch --no-create"
	tool := newBashTool(t, map[string]any{"workDir": f.ws, "deny": []string{pattern}, "denyArgs": []string{"/etc/hostname"}})
	for _, cmd := range []string{"touch --no-create x", "cat /etc/hostname", "rm -rf x"} {
		raw, _ := json.Marshal(map[string]any{"command": cmd})
		_, err := tool.Call(t.Context(), raw)
		if !errors.Is(err, tools.ErrPolicyDenied) {
			t.Fatalf("%q: want a refusal, got %v", cmd, err)
		}
		for _, leak := range []string{`"` + pattern + `"`, `"/etc/hostname"`, `"rm -rf"`} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("%q: the refusal quotes the pattern %q:\n%v", cmd, leak, err)
			}
		}
	}
}
