package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/server"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/state/eventlog"
	"github.com/ruleagent/ruleagent/state/runrecord"
)

const (
	promptDesk   = "You run the order desk."
	promptWriter = "You write the customer's note."
)

// deskChains: an agent that calls a rule-chain tool and a sub-agent at
// once, then answers with their results.
func deskChains(t *testing.T) string {
	t.Helper()
	chain := func(id string, info map[string]any, node map[string]any) []byte {
		rc := map[string]any{"id": id, "name": id}
		if info != nil {
			rc["additionalInfo"] = info
		}
		b, _ := json.Marshal(map[string]any{"ruleChain": rc,
			"metadata": map[string]any{"firstNodeIndex": 0, "nodes": []any{node}, "connections": []any{}}})
		return b
	}
	agent := func(prompt string, tools []any) map[string]any {
		cfg := map[string]any{"url": "${global.llm_url}", "key": "${global.api_key}", "model": "${global.model}",
			"systemPrompt": prompt, "maxRetries": 0, "maxStep": 5, "parallelToolCalls": true}
		if tools != nil {
			cfg["tools"] = tools
		}
		return map[string]any{"id": "agent", "type": "ai/agent", "name": "Agent", "configuration": cfg}
	}
	key := map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}, "required": []any{"key"}}
	files := map[string][]byte{
		"lookup": chain("lookup", nil, map[string]any{"id": "js", "type": "jsTransform", "name": "JS",
			"configuration": map[string]any{"jsScript": `return {msg: {found: msg.key, stock: 7}, metadata: metadata, msgType: msgType};`}}),
		"writer": chain("writer", map[string]any{"description": "Writes a note to the customer."}, agent(promptWriter, nil)),
		"desk": chain("desk", nil, agent(promptDesk, []any{
			map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks an order up.", "targetId": "lookup", "parameters": key},
			map[string]any{"type": "agent", "name": "writer", "targetId": "writer"},
		})),
	}
	dir := t.TempDir()
	for id, b := range files {
		if err := os.WriteFile(filepath.Join(dir, id+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func deskScript() llmtest.Script {
	return llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains(promptDesk), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			res := r.ToolResults()
			if len(res) == 0 {
				return llmtest.Response{Text: "Checking.", ToolCalls: []llmtest.ToolCall{llmtest.Call("lookup", `{"key":"A-1"}`),
					llmtest.Call("writer", `{"message":"A-1 ships Monday"}`)}}
			}
			var parts []string
			for _, m := range res {
				parts = append(parts, m.Content)
			}
			return llmtest.Response{Text: "Done: " + strings.Join(parts, " | "), ChunkSize: 5}
		})},
		llmtest.Rule{Match: llmtest.SystemContains(promptWriter), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			return llmtest.Response{Text: "Dear customer, " + r.LastUserText(), ChunkSize: 4}
		})},
	)
}

// recordingServer is serve's recording in process: the --record-runs
// flags over the session store spec.
func recordingServer(t *testing.T, spec, chains, llmURL string) string {
	t.Helper()
	sess, err := sessions.Open(context.Background(), spec, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	rf := recordFlags{retention: "7d", maxBytes: 16 << 20}
	rec, err := rf.open(sess)
	if err != nil {
		t.Fatal(err)
	}
	// serve's run log: the runs' events in a state file of their own.
	db, err := bolt.Open(filepath.Join(t.TempDir(), StateFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	events, err := eventlog.NewBolt(db, eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { events.Close() })
	store, errs := server.OpenStoreWith(chains, server.NewConfig(map[string]string{"llm_url": llmURL, "api_key": "sk-test", "model": "gpt-4o-mini"}),
		server.StoreOptions{Recording: rec, RunLog: server.RunLog{Events: events, Replica: "test"}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(store.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: server.Handler(server.Options{Store: store})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestRunsExportAndReplayOffline: a run served with the recording on is
// exported by `ruleagent runs export` and replayed by `ruleagent replay`
// with the LLM gone: the same events, exit 0. A record whose LLM answer is
// changed (a bug report edited by hand) replays to a difference, exit 1.
// With the bolt store the events come from the event log; with the memory
// store the record keeps them itself.
func TestRunsExportAndReplayOffline(t *testing.T) {
	for _, spec := range []string{"bolt", "memory"} {
		t.Run(spec, func(t *testing.T) {
			llm := llmtest.NewServer(t, deskScript())
			base := recordingServer(t, spec, deskChains(t), llm.URL)
			resp, err := http.Post(base+"/api/v1/chains/desk/run", "application/json", strings.NewReader(`{"input":"Where is order A-1?"}`))
			if err != nil {
				t.Fatal(err)
			}
			var ans struct{ RunID, Outcome, Data string }
			_ = json.NewDecoder(resp.Body).Decode(&ans)
			resp.Body.Close()
			if ans.Outcome != "success" || !strings.Contains(ans.Data, "Dear customer") || !strings.Contains(ans.Data, `"stock":7`) {
				t.Fatalf("the run: %+v", ans)
			}
			var out, errOut bytes.Buffer
			if code := run(context.Background(), []string{"runs", "list", "--server", base}, nil, &out, &errOut); code != 0 ||
				!strings.Contains(out.String(), ans.RunID) || !strings.Contains(out.String(), "success") {
				t.Fatalf("runs list: %d %s %s", code, out.String(), errOut.String())
			}
			out.Reset()
			if code := run(context.Background(), []string{"runs", "export", "--server", base, ans.RunID}, nil, &out, &errOut); code != 0 {
				t.Fatalf("runs export: %d %s", code, errOut.String())
			}
			rec, err := runrecord.Decode(out.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Events) < 10 || len(rec.Agents) != 2 || len(rec.ToolCalls) != 2 || len(rec.LLMCalls) != 3 {
				t.Fatalf("the export: %d events, %d agents, %d tool calls, %d LLM calls", len(rec.Events), len(rec.Agents), len(rec.ToolCalls), len(rec.LLMCalls))
			}
			file := filepath.Join(t.TempDir(), "run.json")
			if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			calls := len(llm.Requests())
			llm.Close()

			out.Reset()
			errOut.Reset()
			if code := run(context.Background(), []string{"replay", file}, nil, &out, &errOut); code != 0 ||
				!strings.Contains(out.String(), "replayed "+ans.RunID+": the same ") {
				t.Fatalf("replay: %d %s %s", code, out.String(), errOut.String())
			}
			if n := len(llm.Requests()); n != calls {
				t.Fatalf("the replay called the LLM %d times", n-calls)
			}

			// A bug report edited by hand: the model's last answer said
			// something else.
			last := &rec.LLMCalls[len(rec.LLMCalls)-1]
			if !strings.Contains(last.Response.Body, "Done") {
				t.Fatalf("the last LLM call is not the final answer: %s", last.Response.Body)
			}
			last.Response.Body = strings.ReplaceAll(last.Response.Body, "Done", "Fine")
			edited, _ := json.Marshal(rec)
			if err := os.WriteFile(file, edited, 0o644); err != nil {
				t.Fatal(err)
			}
			out.Reset()
			errOut.Reset()
			code := run(context.Background(), []string{"replay", "--json", file}, nil, &out, &errOut)
			var rep server.ReplayReport
			_ = json.Unmarshal(out.Bytes(), &rep)
			if code != exitFailure || rep.Same || rep.Difference == nil || rep.Difference.Field != "delta" {
				t.Fatalf("the edited replay: %d %s %s", code, out.String(), errOut.String())
			}
		})
	}
}

// TestReplaysOfReportedRuns replays each run exported into
// testdata/replays (`ruleagent runs export ID > testdata/replays/NAME.json`):
// how a bug report becomes a test. Each must reproduce its events; a
// change that alters what an agent sends or emits for it fails here,
// naming the first divergence or difference.
func TestReplaysOfReportedRuns(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "replays", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no runs in testdata/replays: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(context.Background(), []string{"replay", f}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), ": the same ") {
				t.Fatalf("replay: %d %s %s", code, out.String(), errOut.String())
			}
		})
	}
}
