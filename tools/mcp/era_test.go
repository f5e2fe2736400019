package mcptool

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// httpServe serves an mcp-go server over streamable HTTP on 127.0.0.1,
// limited to the given protocol versions (none: every one it knows).
func httpServe(t *testing.T, s *server.MCPServer, versions ...string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(s, server.WithStreamableHTTPProtocolVersions(versions...)))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// TestClientSpeaksTheNewestRevision: the client asks server/discover first
// and falls back to the initialize handshake, so each server is spoken to
// in the newest revision both support.
func TestClientSpeaksTheNewestRevision(t *testing.T) {
	p := needPeers(t)
	legacyOnly := httpServe(t, demoServer(), "2025-11-25")
	both := httpServe(t, demoServer())
	for _, tc := range []struct {
		name, entry, tool, want string
		o                       Options
	}{
		{"self", `{"server":"self"}`, "add", "2026-07-28", Options{Self: demoServer()}},
		{"mcp-go over HTTP", `{"server":"` + both + `"}`, "add", "2026-07-28", Options{}},
		{"mcp-go held to 2025-11-25", `{"server":"` + legacyOnly + `"}`, "add", "2025-11-25", Options{}},
		{"server-everything over stdio", `{"server":"stdio:` + filepath.Join(p.bin, "mcp-server-everything") + ` stdio","tools":["echo"]}`, "echo", "2025-11-25", Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := mustBuild(t, tc.o, `[{"type":"mcp","name":"x","config":`+tc.entry+`}]`)
			s := connOf(t, set, "x__"+tc.tool).liveSession()
			if s == nil || s.version != tc.want || s.modern != (tc.want == "2026-07-28") {
				t.Fatalf("session %+v, want version %s", s, tc.want)
			}
		})
	}
}

// TestToolsAddedLaterOverLegacyHTTP: a streamable HTTP server held to
// 2025-11-25 announces tool changes on the GET stream, which the client
// opens once discovery tells it the server is on the handshake.
func TestToolsAddedLaterOverLegacyHTTP(t *testing.T) {
	s := demoServer()
	set := mustBuild(t, Options{}, `[{"type":"mcp","name":"old","config":{"server":"`+httpServe(t, s, "2025-11-25")+`"}}]`)
	if v := connOf(t, set, "old__add").liveSession().version; v != "2025-11-25" {
		t.Fatalf("version %s", v)
	}
	addLate(s)
	waitFor(t, func() bool { return set.Lookup("old__late") != nil })
}

// inputServer has a tool that asks the user's name with input_required,
// and answers once given it. mcp-go turns the question into an
// elicitation/create for a client on 2025-11-25.
func inputServer() *server.MCPServer {
	s := server.NewMCPServer("asker", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("greet", mcp.WithDescription("Asks your name")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if a := server.ElicitationResponse(req.Params.InputResponses, "user_name"); a != nil {
				if a.Action != mcp.ElicitationResponseActionAccept {
					return mcp.NewToolResultText("no name: " + string(a.Action)), nil
				}
				content, _ := a.Content.(map[string]any)
				return mcp.NewToolResultText(fmt.Sprintf("Hello, %v!", content["name"])), nil
			}
			return server.NewInputRequestBuilder("greet-1").Elicit("user_name", mcp.ElicitationParams{
				Message:         "What is your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}},
			}).ToolResult(), nil
		})
	return s
}

// TestRemoteQuestions: a remote tool that asks for input (input_required
// from a 2026-07-28 server, elicitation/create from a 2025-11-25 one)
// reaches the calling run's ask.Asker, and the call completes with the
// answer; a run without one gets a tool error that says what was asked.
func TestRemoteQuestions(t *testing.T) {
	for _, tc := range []struct{ name, entry string }{
		{"2026-07-28 in process", `{"server":"self"}`},
		{"2026-07-28 over HTTP", `{"server":"` + httpServe(t, inputServer()) + `"}`},
		{"2025-11-25 over HTTP", `{"server":"` + httpServe(t, inputServer(), "2025-11-25") + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := mustBuild(t, Options{Self: inputServer()}, `[{"type":"mcp","name":"r","config":`+tc.entry+`}]`)
			call := tools.Call{ID: "c1", Name: "r__greet", Args: json.RawMessage(`{}`)}

			o := set.Invoke(context.Background(), &tools.Run{Sink: events.Discard}, call)
			if !o.IsError || !strings.Contains(o.Content, `"What is your name?" (fields: name string required)`) ||
				!strings.Contains(o.Content, "cannot ask a person") {
				t.Fatalf("without anyone to ask: isError %v, %q", o.IsError, o.Content)
			}

			var asked []ask.Question
			ctx := ask.WithAsker(context.Background(), ask.AskerFunc(func(_ context.Context, q ask.Question) (ask.Answer, error) {
				asked = append(asked, q)
				return ask.Answer{Action: ask.Accept, Content: json.RawMessage(`{"name":"Ada"}`)}, nil
			}))
			o = set.Invoke(ctx, &tools.Run{Sink: events.Discard}, call)
			if o.IsError || o.Content != "Hello, Ada!" || len(asked) != 1 || asked[0].Message != "What is your name?" {
				t.Fatalf("with an asker: %q (asked %+v)", o.Content, asked)
			}

			// A run whose client answers interrupts: the question is a form.
			approver := &formFiller{answer: json.RawMessage(`{"name":"Grace"}`)}
			o = set.Invoke(tools.WithApprover(context.Background(), approver), &tools.Run{Sink: events.Discard}, call)
			if o.IsError || o.Content != "Hello, Grace!" || len(approver.got) != 1 {
				t.Fatalf("with an approver: %q (%d requests)", o.Content, len(approver.got))
			}
			if req := approver.got[0]; req.ToolCallID != "c1" || req.Tool != "r__greet" || req.ToolType != tools.TypeMCP ||
				!strings.Contains(string(req.ResponseSchema), `"name"`) || !strings.Contains(string(req.Args), "What is your name?") {
				t.Errorf("the interrupt's request: %+v", req)
			}
		})
	}
}

// formFiller is a run's Approver (governance) that fills every form.
type formFiller struct {
	answer json.RawMessage
	got    []tools.ApprovalRequest
}

func (f *formFiller) Approve(_ context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
	f.got = append(f.got, req)
	return tools.ApprovalDecision{Approved: true, Answer: f.answer}, nil
}

// progressServer has a tool that reports three steps of progress.
func progressServer() *server.MCPServer {
	s := server.NewMCPServer("slowpoke", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("count", mcp.WithDescription("Counts to three, slowly")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
				for i := 1; i <= 3; i++ {
					params := map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": i, "total": 3}
					if i == 2 {
						params["message"] = "halfway"
					}
					_ = s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), params)
				}
			}
			return mcp.NewToolResultText("counted"), nil
		})
	return s
}

// TestRemoteProgressIsAnActivity: a remote tool's progress becomes an AG-UI
// activity in the run's stream (a snapshot, a delta per report, a last one
// marking it done), which both the Go checker and the real @ag-ui/client
// accept. In process, every report arrives before the result (the self
// transport sees to it). (Over HTTP an mcp-go v1.2.1 server sometimes
// drops the report its forwarder holds when it writes the result, so the
// same count is asserted against the TypeScript server instead:
// TestAgainstTheTypeScriptServer2.)
func TestRemoteProgressIsAnActivity(t *testing.T) {
	var streams [][][]byte
	for _, tc := range []struct{ name, entry string }{
		{"in process", `{"server":"self"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := mustBuild(t, Options{Self: progressServer()}, `[{"type":"mcp","name":"slow","config":`+tc.entry+`}]`)
			var rec events.Recorder
			stream := events.NewStream(&rec, "t1", "r1")
			stream.Emit(events.Event{Type: events.RunStarted})
			o := set.Invoke(context.Background(), &tools.Run{Sink: stream}, tools.Call{ID: "c1", Name: "slow__count", Args: json.RawMessage(`{}`)})
			if o.Err != nil || o.Content != "counted" {
				t.Fatalf("call: %q %v", o.Content, o.Err)
			}
			stream.Emit(events.Event{Type: events.RunFinished, Result: json.RawMessage(`"ok"`)})

			var acts []events.Event
			for _, e := range rec.Events() {
				if e.Type == events.ActivitySnapshot || e.Type == events.ActivityDelta {
					acts = append(acts, e)
				}
			}
			if len(acts) != 4 || acts[0].Type != events.ActivitySnapshot || acts[0].ActivityType != ActivityType || acts[0].MessageID != "mcp-progress-c1" {
				t.Fatalf("activity events: %+v", acts)
			}
			var content map[string]any
			_ = json.Unmarshal(acts[0].Activity, &content)
			if content["server"] != "slow" || content["tool"] != "count" || content["toolCallId"] != "c1" || content["progress"] != 1.0 || content["total"] != 3.0 || content["status"] != "running" {
				t.Errorf("snapshot %s", acts[0].Activity)
			}
			if !strings.Contains(string(acts[1].Patch), `"/message","value":"halfway"`) || !strings.Contains(string(acts[3].Patch), `"/status","value":"done"`) {
				t.Errorf("deltas %s / %s", acts[2].Patch, acts[3].Patch)
			}
			if errs := aguicheck.Check(rec.JSON()); len(errs) > 0 {
				t.Errorf("aguicheck: %v", errs)
			}
			streams = append(streams, rec.JSON())
		})
	}
	aguicheck.VerifyAllWithClient(t, streams...)
}
