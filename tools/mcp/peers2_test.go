package mcptool

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/internal/peers"
	"github.com/ruleagent/ruleagent/internal/proctest"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// sdk2Server is test/peers/mcp2-server.mjs, built on
// @modelcontextprotocol/server 2.x (the 2026-07-28 line).
func sdk2Server(t *testing.T) string {
	t.Helper()
	root := peers.Root(t)
	script := filepath.Join(root, "test", "peers", "mcp2-server.mjs")
	peers.Need(t, script, filepath.Join(root, "test", "peers", "node_modules", "@modelcontextprotocol", "server", "package.json"))
	return script
}

// startSDK2HTTP serves the 2.x server over streamable HTTP on a loopback
// port until the test ends, and returns its URL.
func startSDK2HTTP(t *testing.T) string {
	t.Helper()
	script := sdk2Server(t)
	port := freePort(t)
	cmd := exec.Command("node", script, "http")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	out := &proctest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the 2.x server did not listen: %s", out)
		}
	}
	return "http://" + addr + "/mcp"
}

// TestAgainstTheTypeScriptServer2: the mcp tool type against the official
// server of the 2026-07-28 line, over streamable HTTP and stdio: it speaks
// 2026-07-28, calls tools, passes the server's question to the run's Asker
// (or fails saying what was asked), shows progress as an AG-UI activity,
// keeps an array as structured content and a resource link as a part, and
// follows tools/list_changed on a subscriptions/listen stream.
func TestAgainstTheTypeScriptServer2(t *testing.T) {
	script := sdk2Server(t)
	for _, tc := range []struct{ name, entry string }{
		{"http", `{"server":"` + startSDK2HTTP(t) + `"}`},
		{"stdio", `{"command":"node","args":["` + script + `","stdio"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := mustBuild(t, Options{}, `[{"type":"mcp","name":"ts","config":`+tc.entry+`}]`)
			if s := connOf(t, set, "ts__echo").liveSession(); s == nil || s.version != "2026-07-28" {
				t.Fatalf("session %+v", s)
			}
			if o := mustInvoke(t, set, "ts__echo", `{"message":"hi"}`); o.Content != "Echo: hi" {
				t.Errorf("echo: %q", o.Content)
			}

			greet := tools.Call{ID: "g", Name: "ts__greet", Args: json.RawMessage(`{}`)}
			if o := set.Invoke(context.Background(), &tools.Run{Sink: events.Discard}, greet); !o.IsError || !strings.Contains(o.Content, `"What is your name?"`) {
				t.Errorf("greet without an asker: %q", o.Content)
			}
			ctx := ask.WithAsker(context.Background(), ask.AskerFunc(func(context.Context, ask.Question) (ask.Answer, error) {
				return ask.Answer{Action: ask.Accept, Content: json.RawMessage(`{"name":"Ada"}`)}, nil
			}))
			if o := set.Invoke(ctx, &tools.Run{Sink: events.Discard}, greet); o.IsError || o.Content != "Hello, Ada!" {
				t.Errorf("greet: %q", o.Content)
			}

			st := mustInvoke(t, set, "ts__structured", `{}`)
			if string(st.Result.Structured) != `[1,"two",{"three":3}]` || len(st.Result.Parts) != 1 || st.Result.Parts[0].Type != "resource_link" ||
				!strings.Contains(st.Content, "[resource link: The report, file:///data/report.csv, text/csv, 2 KB]") {
				t.Errorf("structured: %q %s %+v", st.Content, st.Result.Structured, st.Result.Parts)
			}

			var rec events.Recorder
			stream := events.NewStream(&rec, "t", "r")
			stream.Emit(events.Event{Type: events.RunStarted})
			if o := set.Invoke(context.Background(), &tools.Run{Sink: stream}, tools.Call{ID: "c", Name: "ts__count", Args: json.RawMessage(`{}`)}); o.Content != "counted" {
				t.Fatalf("count: %q", o.Content)
			}
			stream.Emit(events.Event{Type: events.RunFinished})
			n := 0
			for _, e := range rec.Events() {
				if e.Type == events.ActivitySnapshot || e.Type == events.ActivityDelta {
					n++
				}
			}
			if n != 4 {
				t.Errorf("%d activity events, want a snapshot, two deltas and the last one", n)
			}
			if errs := aguicheck.Check(rec.JSON()); len(errs) > 0 {
				t.Errorf("aguicheck: %v", errs)
			}

			if tc.name == "http" {
				mustInvoke(t, set, "ts__grow", `{}`)
				waitFor(t, func() bool { return set.Lookup("ts__late") != nil })
				if o := mustInvoke(t, set, "ts__late", `{}`); o.Content != "I was added later" {
					t.Errorf("late: %q", o.Content)
				}
			}
		})
	}
}
