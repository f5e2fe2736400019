package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/state/runrecord"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// Secrets the model streams split across chunks. splitKey is registered
// (the agent's ${global.api_key}), matching no pattern; splitToken is a
// GitHub token, found by its format only.
const (
	splitKey     = "zq9-plain-4471-kWv"
	splitToken   = "ghp_9Zy8Xw7Vu6Ts5Rq4Po3Nm2Lk1Ji0Hg9Fe8D"
	promptLeaky  = "You are the leaky agent."
	leakyToolArg = `{"key":"` + splitToken + `"}`
)

// deltaFrame is one streamed chunk with delta as its delta.
func deltaFrame(delta map[string]any) string {
	b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "delta": delta}}})
	return string(b)
}

func finishChunk(reason string) string {
	return `{"id":"c","object":"chat.completion.chunk","model":"test-model","choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`
}

// cut splits s at the given offsets.
func cut(s string, at ...int) []string {
	var out []string
	last := 0
	for _, a := range at {
		out = append(out, s[last:a])
		last = a
	}
	return append(out, s[last:])
}

// leakyAgent streams, in its first turn, reasoning that splits the token
// in two, text that splits the key in three and a call whose arguments'
// fragments split the token in three; in its second, text that splits
// both again. keyAt and tokAt are where the text of the second turn cuts
// them.
func leakyAgent(keyAt, tokAt int) llmtest.Script {
	return llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		var frames []string
		if len(r.ToolResults()) == 0 {
			for _, p := range cut("Thinking of "+splitToken+" now.", 12+10) {
				frames = append(frames, deltaFrame(map[string]any{"reasoning_content": p}))
			}
			for _, p := range cut("Calling with "+splitKey+".", 13+5, 13+11) {
				frames = append(frames, deltaFrame(map[string]any{"content": p}))
			}
			for i, p := range cut(leakyToolArg, 8+8, 8+20) {
				tc := map[string]any{"index": 0, "function": map[string]any{"arguments": p}}
				if i == 0 {
					tc["id"], tc["type"], tc["function"] = "call_leak", "function", map[string]any{"name": "lookup", "arguments": p}
				}
				frames = append(frames, deltaFrame(map[string]any{"tool_calls": []any{tc}}))
			}
			return llmtest.Response{Frames: append(frames, finishChunk("tool_calls"))}
		}
		text := "Token " + splitToken + " and key " + splitKey + " done."
		for _, p := range cut(text, 6+tokAt, 6+len(splitToken)+9+keyAt) {
			frames = append(frames, deltaFrame(map[string]any{"content": p}))
		}
		return llmtest.Response{Frames: append(frames, finishChunk("stop"))}
	})
}

// newSplitEnv serves the leaky agent, with a session per thread, its
// records in memory and its runs' events in a bolt log: as serve does, a
// run log whose records keep their events themselves (runLog), or the
// recording's own event log (Recording.Events).
func newSplitEnv(t *testing.T, script llmtest.Script, runLog bool) *apiEnv {
	t.Helper()
	e := &apiEnv{t: t, llm: llmtest.NewServer(t, script), dir: t.TempDir()}
	lookup := map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}, "required": []any{"key"}}
	chains := map[string]string{
		"lookup": jsDSL("lookup", "Lookup", nil, `return {msg: {found: "yes", stock: 7}, metadata: metadata, msgType: msgType};`),
		"leaky": chainDSL("leaky", "Leaky", nil, agentNode(promptLeaky, map[string]any{
			"key": "${global.api_key}", "session": map[string]any{"scope": "thread"},
			"tools": []any{map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks a key up.", "targetId": "lookup", "parameters": lookup}},
		})),
	}
	for id, dsl := range chains {
		if err := os.WriteFile(filepath.Join(e.dir, id+".json"), []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rl, lg := boltRunLog(t, stateFile(t))
	so := StoreOptions{RunLog: rl, Recording: Recording{Records: runrecord.NewMemory(runrecord.Options{})}}
	if !runLog {
		so.RunLog, so.Recording.Events = RunLog{}, lg
	}
	cfg := NewConfig(map[string]string{"llm_url": e.llm.URL, "api_key": splitKey, "model": "test-model"})
	components.RegisterSessions(&cfg, sessions.NewMemory())
	var errs []error
	e.store, errs = OpenStoreWith(e.dir, cfg, so)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(e.store.Close)
	e.opts = Options{Store: e.store}
	e.base = serveLoopback(t, Handler(e.opts))
	return e
}

// secretWindows are the pieces of the secrets that would identify them:
// every run of 6 of their bytes.
func secretWindows() []string {
	var out []string
	for _, s := range []string{splitKey, splitToken} {
		for i := 0; i+6 <= len(s); i++ {
			out = append(out, s[i:i+6])
		}
	}
	return out
}

// TestRecordScrubsSecretsSplitAcrossChunks: a registered secret and a
// token the model streams split across 2 and 3 chunks (in its reasoning,
// its text and a tool call's argument fragments) are in no part of the
// stored record (its events, its LLM answers as streamed, its tool calls'
// arguments, its session's recall and keep), nor any 6 bytes of them; the
// record shows [REDACTED] where each was, in its events and its answers
// alike; its replay, on the server and offline from its export, is the
// same as the run. With the run log as serve has it, and with the
// recording's own event log.
func TestRecordScrubsSecretsSplitAcrossChunks(t *testing.T) {
	t.Run("runlog", func(t *testing.T) { testSplitSecrets(t, true) })
	t.Run("eventlog", func(t *testing.T) { testSplitSecrets(t, false) })
}

func testSplitSecrets(t *testing.T, runLog bool) {
	for _, at := range []struct{ key, tok int }{{1, 1}, {7, 20}, {len(splitKey) - 1, len(splitToken) - 1}} {
		e := newSplitEnv(t, leakyAgent(at.key, at.tok), runLog)
		var runs []string
		for _, input := range []string{"leak it", "again"} {
			code, body, hdr := e.do("POST", "/api/v1/chains/leaky/run", map[string]any{"input": input, "threadId": "t-split"})
			if code != http.StatusOK || !strings.Contains(string(body), `"outcome":"success"`) {
				t.Fatalf("run: %d %s", code, body)
			}
			// The model's own text reaches its client as it said it.
			if !strings.Contains(string(body), "Token "+splitToken+" and key "+splitKey+" done.") {
				t.Fatalf("the run's answer is not the model's text: %s", body)
			}
			runs = append(runs, hdr.Get("X-Run-Id"))
		}
		for _, id := range runs {
			code, exported, _ := e.do("GET", "/api/v1/runs/"+id+"/record", nil)
			if code != http.StatusOK {
				t.Fatalf("export: %d %s", code, exported)
			}
			for _, w := range secretWindows() {
				if strings.Contains(string(exported), w) {
					t.Fatalf("split at %+v: the record of %s holds %q:\n%s", at, id, w, exported)
				}
			}
			rec, err := runrecord.Decode(exported)
			if err != nil {
				t.Fatal(err)
			}
			if id == runs[1] && (len(rec.Memory) == 0 || !strings.Contains(string(rec.Memory[0].Messages), "Token "+scrub.Redacted+" and key "+scrub.Redacted)) {
				t.Fatalf("the second run did not recall the first's answer, redacted: %+v", rec.Memory)
			}
			checkSplitRedactions(t, rec)

			code, body, _ := e.do("POST", "/api/v1/runs/"+id+"/replay", map[string]any{})
			if code != http.StatusOK || !strings.Contains(string(body), `"same":true`) {
				t.Fatalf("split at %+v: replay of %s: %d %s", at, id, code, body)
			}
			replayOffline(t, exported)
		}
	}
}

// checkSplitRedactions: the record's events and its answers as streamed
// show the marker where each secret was, the same in both.
func checkSplitRedactions(t *testing.T, rec *runrecord.Record) {
	t.Helper()
	want := "Token " + scrub.Redacted + " and key " + scrub.Redacted + " done."
	var text, args strings.Builder
	var final string
	for _, raw := range rec.Events {
		var ev struct{ Type, Delta string }
		_ = json.Unmarshal(raw, &ev)
		switch ev.Type {
		case "TEXT_MESSAGE_START":
			text.Reset()
		case "TEXT_MESSAGE_CONTENT":
			if ev.Delta == "" {
				t.Errorf("an empty TEXT_MESSAGE_CONTENT was kept: %s", raw)
			}
			text.WriteString(ev.Delta)
		case "TEXT_MESSAGE_END":
			final = text.String()
		case "TOOL_CALL_ARGS":
			args.WriteString(ev.Delta)
		}
	}
	if args.String() != `{"key":"`+scrub.Redacted+`"}` || string(rec.ToolCalls[0].Args) != args.String() {
		t.Errorf("the record's call arguments: events %q, call %s", args.String(), rec.ToolCalls[0].Args)
	}
	if final != want {
		t.Errorf("the record's events say %q, want %q", final, want)
	}
	last := rec.LLMCalls[len(rec.LLMCalls)-1].Response.Body
	var streamed strings.Builder
	for line := range strings.Lines(last) {
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && d != "[DONE]" {
			var c struct {
				Choices []struct{ Delta struct{ Content string } }
			}
			_ = json.Unmarshal([]byte(d), &c)
			for _, ch := range c.Choices {
				streamed.WriteString(ch.Delta.Content)
			}
		}
	}
	if streamed.String() != want {
		t.Errorf("the record's last answer streams %q, want %q", streamed.String(), want)
	}
}

// replayOffline replays an export as `ruleagent replay` does: a new store
// on the record's globals, no model, no run log.
func replayOffline(t *testing.T, exported []byte) {
	t.Helper()
	rec, err := runrecord.Decode(exported)
	if err != nil {
		t.Fatal(err)
	}
	store, errs := OpenStoreWith(t.TempDir(), NewConfig(rec.Globals), StoreOptions{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	defer store.Close()
	recorded := make([][]byte, len(rec.Events))
	for i, e := range rec.Events {
		recorded[i] = e
	}
	rep, err := store.Replay(context.Background(), rec, recorded, ReplayOptions{})
	if err != nil || !rep.Same {
		b, _ := json.Marshal(rep)
		t.Fatalf("the offline replay of the export: %s %v", b, err)
	}
}
