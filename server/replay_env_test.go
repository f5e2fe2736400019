package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/state/eventlog"
	"github.com/ruleagent/ruleagent/state/runrecord"
)

// recEnv is a server that records its runs (records and events in a bbolt
// file, as serve keeps them), over chains that make a mixed run: text and
// reasoning, parallel tool calls, a sub-agent, a rulechain tool and its
// node steps, an approval pause, a failover.
type recEnv struct {
	*apiEnv
	backup      *llmtest.Server
	records     runrecord.Store
	log         eventlog.Log
	db          *bolt.DB
	checkpoints func(replica string) checkpoint.Store
	// mods change the options of each store open opens.
	mods []func(*StoreOptions, *Options)
}

const (
	promptMixed     = "You are the mixed agent."
	promptSummarise = "You are the summariser."
)

// mixedAgent: turn 1 reasons, says something and calls lookup and the
// summariser at once; turn 2 asks to confirm (approval); turn 3 the
// primary endpoint is overloaded (the backup answers, failover).
func mixedAgent(r *llmtest.Request) llmtest.Response {
	switch res := r.ToolResults(); len(res) {
	case 0:
		return llmtest.Response{Reasoning: "The user wants A-1 looked up and summarised.", Text: "Looking A-1 up.",
			ToolCalls: []llmtest.ToolCall{llmtest.Call("lookup", `{"key":"A-1"}`), llmtest.Call("summariser", `{"message":"summarise A-1"}`)}}
	case 2:
		return llmtest.Calls(llmtest.Call("confirm", `{"key":"B-2"}`))
	}
	return llmtest.Response{Status: http.StatusServiceUnavailable, ErrorMessage: "the model is overloaded"}
}

// backupAgent answers with the tool results it read.
func backupAgent(r *llmtest.Request) llmtest.Response {
	var parts []string
	for _, m := range r.ToolResults() {
		parts = append(parts, m.Content)
	}
	return llmtest.Response{Text: "Done: " + strings.Join(parts, " | "), ChunkSize: 7}
}

func recScript() llmtest.Script {
	return llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains(promptMixed), Script: llmtest.ScriptFunc(mixedAgent)},
		llmtest.Rule{Match: llmtest.SystemContains(promptSummarise), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			// One chunk: a secret it repeats is whole in the recorded body.
			return llmtest.Response{Reasoning: "Short.", Text: "A-1 is a blue widget, " + r.LastUserText(), ChunkSize: 200}
		})},
	)
}

func recChains(backupURL string) map[string]string {
	lookup := map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}, "required": []any{"key"}}
	return map[string]string{
		"lookup": jsDSL("lookup", "Lookup", nil, `return {msg: {found: msg.key, stock: 7}, metadata: metadata, msgType: msgType};`),
		"summariser": chainDSL("summariser", "Summariser", map[string]any{"description": "Summarises an order."},
			agentNode(promptSummarise, nil)),
		"mixed": chainDSL("mixed", "Mixed", nil, agentNode(promptMixed, map[string]any{
			"parallelToolCalls": true,
			"failover":          []any{map[string]any{"url": backupURL, "model": "backup-model", "key": "sk-backup"}},
			"approval":          map[string]any{"tools": []any{"confirm"}, "timeout": "30s"},
			"tools": []any{
				map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks a key up.", "targetId": "lookup", "parameters": lookup},
				map[string]any{"type": "rulechain", "name": "confirm", "description": "Confirms an order.", "targetId": "lookup", "parameters": lookup},
				map[string]any{"type": "agent", "name": "summariser", "targetId": "summariser"},
			}})),
	}
}

// newRecEnv serves the recording chains.
func newRecEnv(t *testing.T, mods ...func(*StoreOptions, *Options)) *recEnv {
	t.Helper()
	e := &recEnv{apiEnv: &apiEnv{t: t, llm: llmtest.NewServer(t, recScript()), dir: t.TempDir()},
		backup: llmtest.NewServer(t, llmtest.ScriptFunc(backupAgent)), checkpoints: sharedBolt(t), mods: mods}
	for id, dsl := range recChains(e.backup.URL) {
		if err := os.WriteFile(filepath.Join(e.dir, id+".json"), []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	e.db, err = bolt.Open(filepath.Join(t.TempDir(), "sessions.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.db.Close() })
	if e.records, err = runrecord.NewBolt(e.db, runrecord.Options{}); err != nil {
		t.Fatal(err)
	}
	e.open("test")
	t.Cleanup(func() { e.log.Close() })
	t.Cleanup(func() { e.store.Close() })
	return e
}

// open serves the chains from a store of replica's, on the env's files:
// its event log, its paused runs, its records.
func (e *recEnv) open(replica string) {
	t := e.t
	var err error
	if e.log, err = eventlog.NewBolt(e.db, eventlog.Options{FlushInterval: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	var errs []error
	so := StoreOptions{Recording: Recording{Records: e.records, Events: e.log, Replica: replica}, Checkpoints: e.checkpoints(replica), Replica: replica}
	for _, m := range e.mods {
		m(&so, nil)
	}
	e.store, errs = OpenStoreWith(e.dir, NewConfig(map[string]string{"llm_url": e.llm.URL, "api_key": "sk-test", "model": "test-model"}), so)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	e.opts = Options{Store: e.store}
	for _, m := range e.mods {
		m(nil, &e.opts)
	}
	e.base = serveLoopback(t, Handler(e.opts))
}

// restart stops the env's process and starts the next one, on the same
// files, as replica.
func (e *recEnv) restart(replica string) {
	e.store.Close()
	if err := e.log.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.open(replica)
}

// runMixed runs the mixed chain over HTTP as a client would: the run
// streams until it pauses for the approval, the approval's answer
// streams the rest. It returns the run id and its events.
func (e *recEnv) runMixed() (string, [][]byte) {
	runID, interrupt, evs := e.startMixed()
	return runID, append(evs, e.approve(runID, interrupt)...)
}

// startMixed runs the mixed chain until it pauses for the approval: its
// run id, the interrupt, the events.
func (e *recEnv) startMixed() (string, string, [][]byte) {
	t := e.t
	t.Helper()
	code, body, hdr := e.do("POST", "/api/v1/chains/mixed/run", map[string]any{"input": "Look up A-1 and confirm it.", "stream": true})
	if code != http.StatusOK {
		t.Fatalf("run: %d %s", code, body)
	}
	runID := hdr.Get("X-Run-Id")
	evs := sseEvents(t, withoutIDs(body))
	var last struct {
		Outcome struct {
			Interrupts []struct{ ID string } `json:"interrupts"`
		} `json:"outcome"`
	}
	_ = json.Unmarshal(evs[len(evs)-1], &last)
	if len(last.Outcome.Interrupts) != 1 {
		t.Fatalf("the run did not pause for the approval: %s", evs[len(evs)-1])
	}
	return runID, last.Outcome.Interrupts[0].ID, evs
}

// approve approves interrupt of paused run runID, streaming the rest.
func (e *recEnv) approve(runID, interrupt string) [][]byte {
	t := e.t
	t.Helper()
	code, body, _ := e.do("POST", "/api/v1/runs/"+runID+"/resume", map[string]any{"stream": true,
		"resume": []any{map[string]any{"interruptId": interrupt, "status": "resolved", "payload": map[string]any{"approved": true}}}})
	if code != http.StatusOK {
		t.Fatalf("resume: %d %s", code, body)
	}
	return sseEvents(t, withoutIDs(body))
}

// llmCalls counts the requests both scripted endpoints got.
func (e *recEnv) llmCalls() int { return len(e.llm.Requests()) + len(e.backup.Requests()) }

// withoutIDs drops the SSE id lines a store with a run log sends.
func withoutIDs(body []byte) []byte {
	return sseIDLine.ReplaceAll(body, nil)
}

var sseIDLine = regexp.MustCompile(`(?m)^id: [0-9]+\n`)
