package adversarial_test

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/internal/testhooks"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// The kernel layer alone (issue 15): each hostile command runs with the
// command policy switched off, so only the sandbox stands between it and
// its effect, which must not happen (a marker file not created, a canary
// not changed, a secret not printed, a connection not accepted). The same
// commands with the policy on are refused with their reasons.

// requireSandbox skips a test that needs the kernel's Landlock, saying
// why; in CI, where Landlock is available, its absence is a failure.
func requireSandbox(t *testing.T) sandbox.Status {
	t.Helper()
	st := sandbox.Describe()
	if !st.Available {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run the sandbox tests, but the kernel cannot confine commands: %s", st.Reason)
		}
		t.Skipf("the kernel cannot confine commands here: %s", st.Reason)
	}
	return st
}

type kernelCase struct {
	cmd string
	// rule is what the policy, when on, must name in its refusal.
	rule string
}

// sandboxFixture is a canaryFixture whose hostile commands aim at a
// marker in the workspace (so that only the exec allowlist stops them) or
// outside it.
type sandboxFixture struct {
	canaryFixture
	wsMarker string
}

func newSandboxFixture(t *testing.T) sandboxFixture {
	f := sandboxFixture{canaryFixture: newCanary(t)}
	f.wsMarker = filepath.Join(f.ws, "pwned-in-workspace")
	return f
}

func (f sandboxFixture) expand(cmd string) string {
	return strings.NewReplacer("WSMARKER", f.wsMarker, "MARKER", f.marker, "OUTSIDE", f.outside, "CANARY", f.canary).Replace(cmd)
}

// kernelOnly runs each case on a tool whose policy is off and checks that
// nothing happened, then on a tool with the same config and the policy on
// and checks the refusal.
func (f sandboxFixture) kernelOnly(t *testing.T, config map[string]any, cases []kernelCase) {
	t.Helper()
	config["workDir"] = f.ws
	off := newBashTool(t, clone(config))
	testhooks.DisableBashPolicy(t, off)
	// The policy's own view of interpreters is its default (off): with
	// them on it could not see into perl -e, which is exactly what the
	// kernel is for.
	onConfig := clone(config)
	delete(onConfig, "interpreters")
	on := newBashTool(t, onConfig)
	before := snapshot(t, filepath.Dir(f.ws))
	for _, tc := range cases {
		cmd := f.expand(tc.cmd)
		raw, _ := json.Marshal(map[string]any{"command": cmd})
		res, err := off.Call(t.Context(), raw)
		if err != nil && !errors.Is(err, tools.ErrTimeout) {
			t.Errorf("%q with the policy off: the tool failed instead of running it: %v", cmd, err)
		}
		assertNoSecrets(t, res.Text)
		for _, m := range []string{f.marker, f.wsMarker} {
			if _, statErr := os.Stat(m); statErr == nil {
				t.Fatalf("%q: with the policy off, the kernel let it create %s:\n%s", cmd, m, res.Text)
			}
		}
		_, err = on.Call(t.Context(), raw)
		if !errors.Is(err, tools.ErrPolicyDenied) || !strings.Contains(err.Error(), `rule "`+tc.rule+`"`) {
			t.Errorf("%q with the policy on: want a refusal by rule %q, got %v", cmd, tc.rule, err)
		}
	}
	after := snapshot(t, filepath.Dir(f.ws))
	// The workspace may gain files the commands wrote there legitimately
	// (a.tar, copies); nothing outside it may change.
	for p := range after {
		if !strings.HasPrefix(p, f.ws+string(filepath.Separator)) && before[p] != after[p] {
			t.Errorf("changed or created outside the workspace: %s", p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("removed: %s", p)
		}
	}
}

func clone(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestKernelStopsFunctionShadowingInAllowMode(t *testing.T) {
	requireSandbox(t)
	f := newSandboxFixture(t)
	f.kernelOnly(t, map[string]any{"mode": "allow", "allow": []string{"echo", "ls", "true", "false"}}, []kernelCase{
		{"if false; then touch(){ :; }; fi; touch WSMARKER", "allow"},
		{"(touch(){ :; }); touch WSMARKER", "allow"},
		{"touch(){ :; }; unset -f touch; touch WSMARKER", "allow"},
		{"cat CANARY", "allow"},
	})
}

func TestKernelStopsWrappersThatExec(t *testing.T) {
	requireSandbox(t)
	f := newSandboxFixture(t)
	cases := []kernelCase{
		{"setpriv --no-new-privs touch WSMARKER", "deny"},
		{"sed -n '1e touch WSMARKER' data.txt", "launcher"},
		{"tar -I 'touch WSMARKER' -cf a.tar data.txt", "deny"},
		{"find . -maxdepth 0 -exec touch WSMARKER ';'", "deny"},
		{"echo x | xargs touch WSMARKER", "deny"},
		{"env touch WSMARKER", "deny"},
		{"nice touch WSMARKER", "deny"},
		{"timeout 5 touch WSMARKER", "deny"},
		{"nohup touch WSMARKER", "deny"},
		{"strace -f -o /dev/null touch WSMARKER", "deny"},
		{"prlimit --nofile=64 touch WSMARKER", "deny"},
		// The dynamic loader maps what it can read: denied programs are
		// not readable, so neither it nor a copy can run them.
		{"/lib64/ld-linux-x86-64.so.2 /usr/bin/touch WSMARKER", "deny"},
		{"cp /usr/bin/touch ./t && ./t WSMARKER", "unverifiable_script"},
	}
	f.kernelOnly(t, map[string]any{"deny": []string{"touch"}}, cases)
}

func TestKernelStopsProgramsWrittenIntoTheWorkspace(t *testing.T) {
	st := requireSandbox(t)
	if !st.Namespaces {
		t.Skipf("no namespaces here (%s): making the workspace non-executable needs a mount namespace", st.Reason)
	}
	f := newSandboxFixture(t)
	// A copy of an allowed program is just a file in the workspace: it
	// cannot be executed, not even through the dynamic loader, because the
	// workspace is mounted noexec for confined commands.
	f.kernelOnly(t, map[string]any{}, []kernelCase{
		{"cp /bin/ls ./myls && ./myls && touch WSMARKER", "unverifiable_script"},
		{"cp /bin/ls ./myls && /lib64/ld-linux-x86-64.so.2 ./myls && echo x > WSMARKER", "unverifiable_script"},
	})
}

func TestKernelStopsInterpretersFromExecuting(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed")
	}
	f := newSandboxFixture(t)
	f.kernelOnly(t, map[string]any{"deny": []string{"touch"}, "interpreters": "on"}, []kernelCase{
		{`perl -e 'system("touch WSMARKER")'`, "interpreters"},
		{`perl -e 'exec "/usr/bin/touch", "WSMARKER"'`, "interpreters"},
	})
}

func TestKernelStopsWritesOutsideTheWorkspace(t *testing.T) {
	requireSandbox(t)
	f := newSandboxFixture(t)
	cases := []kernelCase{
		{"echo pwned > MARKER", "denyArgs"},
		{"echo pwned >> CANARY", "denyArgs"},
		{"cp data.txt MARKER", "denyArgs"},
		{"mv data.txt MARKER", "destructive"},
		{"rm -r OUTSIDE", "destructive"},
		{"cat CANARY", "denyArgs"},
	}
	if _, err := exec.LookPath("perl"); err == nil {
		cases = append(cases, kernelCase{`perl -e 'open(F, ">MARKER") or die; print F "x"'`, "interpreters"})
	}
	f.kernelOnly(t, map[string]any{"denyArgs": []string{f.outside}, "interpreters": "on"}, cases)
}

func TestKernelStopsTCPConnections(t *testing.T) {
	requireSandbox(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	f := newSandboxFixture(t)
	cases := []kernelCase{{"echo hi > /dev/tcp/127.0.0.1/" + port, "reverse_shell"}}
	if _, err := exec.LookPath("perl"); err == nil {
		cases = append(cases, kernelCase{`perl -MIO::Socket::INET -e 'IO::Socket::INET->new("127.0.0.1:` + port + `") or exit 1'`, "interpreters"})
	}
	f.kernelOnly(t, map[string]any{"shellPath": "/bin/bash", "interpreters": "on"}, cases)
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the server on 127.0.0.1 accepted %d connections from confined commands", n)
	}
	// With the port listed in connect, the same connection goes through.
	tool := newBashTool(t, map[string]any{"workDir": f.ws, "shellPath": "/bin/bash", "connect": []string{"127.0.0.1:" + port}, "allowGroups": []string{"reverse_shell"}})
	raw, _ := json.Marshal(map[string]any{"command": "echo hi > /dev/tcp/127.0.0.1/" + port})
	if res, err := tool.Call(t.Context(), raw); err != nil || !strings.Contains(res.Text, "exit code: 0") {
		t.Fatalf("a listed destination should be reachable: %v %s", err, res.Text)
	}
	deadline := time.Now().Add(5 * time.Second)
	for accepted.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if accepted.Load() != 1 {
		t.Fatalf("the listed destination got %d connections, want 1", accepted.Load())
	}
}

func TestKernelHidesCredentialsAndBackups(t *testing.T) {
	st := requireSandbox(t)
	f := newSandboxFixture(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	secretKey := filepath.Join(home, ".ssh", "id_ed25519")
	backup := filepath.Join(f.ws, ".ruleagent", "backups", "s1", "data.txt.v1")
	for _, p := range []string{secretKey, backup} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(deniedSecret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tool := newBashTool(t, map[string]any{"workDir": f.ws, "allowGroups": []string{"env_read"}})
	testhooks.DisableBashPolicy(t, tool)
	reads := []string{"cat " + secretKey, "ls -la " + home + "/.ssh", "cat " + filepath.Join(home, ".ssh", "*")}
	if st.Namespaces {
		reads = append(reads, "cat .ruleagent/backups/s1/data.txt.v1", "grep -r TOPSECRET .")
	} else {
		t.Logf("no namespaces here (%s): the backups inside the workspace are not hidden", st.Reason)
	}
	for _, cmd := range reads {
		raw, _ := json.Marshal(map[string]any{"command": cmd})
		res, err := tool.Call(t.Context(), raw)
		if err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		if strings.Contains(res.Text, deniedSecret) {
			t.Errorf("%q read a credential or a backup:\n%s", cmd, res.Text)
		}
	}
}

// TestSandboxPositiveControls: what worked before still works when
// confined, and the timeout still kills the whole group.
func TestSandboxPositiveControls(t *testing.T) {
	requireSandbox(t)
	f := newSandboxFixture(t)
	for _, policyOff := range []bool{false, true} {
		tool := newBashTool(t, map[string]any{"workDir": f.ws, "timeout": "20s"})
		if policyOff {
			testhooks.DisableBashPolicy(t, tool)
		}
		for _, c := range []struct{ cmd, want string }{
			{"ls -la | grep data.txt | wc -l", "1"},
			{"for i in 1 2 3; do echo n$i; done | tr '\\n' ' '", "n1 n2 n3"},
			{"mkdir -p out/sub && echo hello > out/sub/f.txt && cat out/sub/f.txt", "hello"},
			{"cd \"$TMPDIR\" && echo scratch > ./x && cat ./x", "scratch"},
			{"git init -q repo && cd repo && git status --short && echo git-ok", "git-ok"},
			{"sort data.txt | uniq | head -1", "line one"},
		} {
			raw, _ := json.Marshal(map[string]any{"command": c.cmd})
			res, err := tool.Call(t.Context(), raw)
			if err != nil || !strings.Contains(res.Text, "exit code: 0") || !strings.Contains(res.Text, c.want) {
				t.Errorf("policy off=%v, %q: %v\n%s", policyOff, c.cmd, err, res.Text)
			}
		}
		start := time.Now()
		raw, _ := json.Marshal(map[string]any{"command": "sleep 30 & sleep 30", "timeout": 300})
		_, err := tool.Call(t.Context(), raw)
		if !errors.Is(err, tools.ErrTimeout) || time.Since(start) > 10*time.Second {
			t.Errorf("policy off=%v: the long command was not killed at its timeout: %v after %s", policyOff, err, time.Since(start))
		}
	}
}
