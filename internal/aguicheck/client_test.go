package aguicheck

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeTB records what a helper reports instead of failing the real test.
// Fatalf and Skipf end the calling goroutine, as the real ones do.
type fakeTB struct {
	testing.TB // nil: only the methods below may be called
	errors     []string
	fatals     []string
	skips      []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skips = append(f.skips, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// withFakeTB runs fn against a fakeTB on its own goroutine, so that Goexit
// ends only fn.
func withFakeTB(fn func(tb *fakeTB)) *fakeTB {
	tb := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	return tb
}

func requirePeer(t *testing.T) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	skipWithoutPeer(t, root)
	return root
}

// TestVerifyWithClientReportsRejections: a rejection and a warning both fail
// the test, each naming its stream; an accepted stream does not.
func TestVerifyWithClientReportsRejections(t *testing.T) {
	requirePeer(t)
	valid := run()
	rejected := run(`{"type":"TOOL_CALL_END","toolCallId":"c1"}`)
	warned := run(`{"type":"CUSTOM","name":"n","value":1,"debug":true}`)
	tb := withFakeTB(func(tb *fakeTB) { VerifyAllWithClient(tb, valid, rejected, valid, warned) })
	if len(tb.fatals)+len(tb.skips) > 0 {
		t.Fatalf("fatals %q, skips %q", tb.fatals, tb.skips)
	}
	want := []string{
		"@ag-ui/client rejected stream 1: event 1 (TOOL_CALL_END): Cannot send 'TOOL_CALL_END' event: No active tool call found with ID 'c1'.",
		"@ag-ui/client rejected stream 3: accepted with warnings: event 1 (CUSTOM): [ag-ui][enforce] Removed unrecognised material at '/debug'",
	}
	if len(tb.errors) != len(want) {
		t.Fatalf("want %d errors, got %q", len(want), tb.errors)
	}
	for i, w := range want {
		if !strings.Contains(tb.errors[i], w) {
			t.Errorf("error %d:\n got: %s\nwant: …%s…", i, tb.errors[i], w)
		}
	}
	tb = withFakeTB(func(tb *fakeTB) { VerifyWithClient(tb, rejected) })
	if len(tb.errors) != 1 || !strings.HasPrefix(tb.errors[0], "@ag-ui/client rejected the stream: event 1 (TOOL_CALL_END)") {
		t.Errorf("single stream: got %q", tb.errors)
	}
}

// TestMissingPeer: without the peer a test is skipped with install advice,
// except under CI, where it fails.
func TestMissingPeer(t *testing.T) {
	noPeers := t.TempDir()
	streams := [][][]byte{run()}

	t.Setenv("CI", "")
	tb := withFakeTB(func(tb *fakeTB) { clientVerdictsOrSkip(tb, noPeers, streams) })
	if len(tb.skips) != 1 || !strings.Contains(tb.skips[0], "npm ci --prefix test/peers") || len(tb.fatals) > 0 {
		t.Errorf("outside CI: want a skip naming npm ci, got skips %q, fatals %q", tb.skips, tb.fatals)
	}

	t.Setenv("CI", "true")
	tb = withFakeTB(func(tb *fakeTB) { clientVerdictsOrSkip(tb, noPeers, streams) })
	if len(tb.fatals) != 1 || !strings.Contains(tb.fatals[0], "must run under CI") || len(tb.skips) > 0 {
		t.Errorf("under CI: want a failure, got fatals %q, skips %q", tb.fatals, tb.skips)
	}

	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	if got := missingPeer(root); got != "node is not on PATH" {
		t.Errorf("without node on PATH: missingPeer = %q", got)
	}
}

// TestHarnessSingleStreamMode checks the harness's command-line contract for
// people running it by hand: exit 0 when accepted, 1 with the client's
// message on stderr when rejected.
func TestHarnessSingleStreamMode(t *testing.T) {
	root := requirePeer(t)
	harness := filepath.Join(root, harnessPath)
	for _, c := range []struct {
		name     string
		events   [][]byte
		exitCode int
		stderr   string
	}{
		{"accepted", fullRun, 0, ""},
		{"rejected", run(`{"type":"STEP_FINISHED","stepName":"s"}`), 1, `event 1 (STEP_FINISHED): Cannot send 'STEP_FINISHED' for step "s" that was not started`},
	} {
		cmd := exec.Command("node", harness)
		cmd.Stdin = bytes.NewReader(append(bytes.Join(c.events, []byte("\n")), '\n'))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if code != c.exitCode || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d, stderr containing %q", c.name, code, stderr.String(), c.exitCode, c.stderr)
		}
	}
}
