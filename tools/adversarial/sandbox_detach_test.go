package adversarial_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/tools/internal/testhooks"
)

// A confined command that detaches a process of its own (a new session,
// its parent gone, out of the call's process group) does not outlive the
// call: the sandbox helper adopts orphans (a child subreaper) and kills
// them when a command ends. The parser would refuse setsid; an interpreter
// calling setsid() itself is what only the kernel side can stop.
func TestKernelLeavesNoDetachedProcessBehind(t *testing.T) {
	requireSandbox(t)
	ws := t.TempDir()
	tool := newBashTool(t, map[string]any{"workDir": ws, "interpreters": "on"})
	testhooks.DisableBashPolicy(t, tool)
	const tag = "97.25"
	for _, cmd := range []string{
		`perl -e 'use POSIX; exit if fork; POSIX::setsid(); exit if fork; sleep ` + tag + `' &`,
		`(perl -e 'use POSIX; POSIX::setsid(); sleep ` + tag + `' &) ; sleep 0.2`,
	} {
		raw, _ := json.Marshal(map[string]any{"command": cmd})
		if _, err := tool.Call(t.Context(), raw); err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			left := processesWith(t, "sleep "+tag)
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%q left %v running after the call", cmd, left)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// processesWith lists the pids whose command line contains s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}
