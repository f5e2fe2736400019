package components

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

func TestSyncAndStreamModes(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: "Hello, Ada. How can I help?"}))
	id, dsl := agentChain(t, srv.URL, nil)
	e := newEngine(t, id, dsl)
	for _, stream := range []bool{false, true} {
		r := send(t, context.Background(), e, "hi", map[string]string{"userName": "Ada", "userId": "u1"}, stream)
		end := oneTerminal(t, r, types.Success)
		if end.msg.GetData() != "Hello, Ada. How can I help?" {
			t.Fatalf("answer %q", end.msg.GetData())
		}
		md := end.msg.Metadata
		if md.GetValue("model") != "test-model" || md.GetValue("steps") != "1" || md.GetValue("truncated") != "false" || md.GetValue("totalTokens") == "0" {
			t.Fatalf("metadata %v", md.Values())
		}
		req := srv.LastRequest()
		if req.System() != "You help Ada." {
			t.Fatalf("system prompt template not evaluated per message: %q", req.System())
		}
		if req.Stream != stream {
			t.Fatalf("LLM stream=%v in %v mode", req.Stream, stream)
		}
		if stream {
			checkEvents(t, &r.rec)
			if n := len(r.rec.Events()); n < 6 {
				t.Fatalf("only %d events in stream mode", n)
			}
		} else if len(r.rec.Events()) != 0 {
			t.Fatal("sync mode produced events without a sink")
		}
	}
}

func TestInputFormats(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		return llmtest.Reply("turns=" + strconv.Itoa(len(r.Messages)) + " last=" + r.LastUserText())
	}))
	id, dsl := agentChain(t, srv.URL, nil)
	e := newEngine(t, id, dsl)
	cases := map[string]string{
		"plain text": "what is up",
		"message":    `{"message":"what is up"}`,
		"messages":   `{"messages":[{"role":"user","content":"earlier"},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"what is up"}]}]}`,
	}
	want := map[string]string{"plain text": "turns=2 last=what is up", "message": "turns=2 last=what is up", "messages": "turns=4 last=what is up"}
	for name, in := range cases {
		r := send(t, context.Background(), e, in, nil, false)
		if end := oneTerminal(t, r, types.Success); end.msg.GetData() != want[name] {
			got := end.msg.GetData()
			t.Fatalf("%s: %q", name, got)
		}
	}
	// A malformed messages array is a typed Failure.
	r := send(t, context.Background(), e, `{"messages":[{"content":"no role"}]}`, nil, false)
	end := oneTerminal(t, r, types.Failure)
	if end.msg.Metadata.GetValue("errorCode") != CodeBadInput {
		t.Fatalf("errorCode %q", end.msg.Metadata.GetValue("errorCode"))
	}
}

func TestToolLoopParallelThroughRuleGo(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Sequence(
		llmtest.Calls(llmtest.Call("test_add", `{"a":1,"b":2}`), llmtest.Call("test_add", `{"a":3,"b":4}`)),
		llmtest.Calls(llmtest.Call("test_add", `{"a":3,"b":7}`)),
		llmtest.Reply("Total: 10."),
	))
	id, dsl := agentChain(t, srv.URL, map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "test_add"}}})
	e := newEngine(t, id, dsl)
	before := testAddCalls.Load()
	r := send(t, context.Background(), e, "add", nil, true)
	end := oneTerminal(t, r, types.Success)
	if end.msg.GetData() != "Total: 10." || end.msg.Metadata.GetValue("toolCalls") != "3" || testAddCalls.Load()-before != 3 {
		t.Fatalf("%q %v", end.msg.GetData(), end.msg.Metadata.Values())
	}
	checkEvents(t, &r.rec)
	results := srv.Requests()[1].ToolResults()
	if len(results) != 2 || results[0].Content != "3" || results[1].Content != "7" {
		t.Fatalf("results %+v", results)
	}
}

func TestMidStreamErrorOneFailure(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: "This will break mid way through", ChunkSize: 2, BreakAfter: 3}))
	id, dsl := agentChain(t, srv.URL, map[string]any{"maxRetries": 3})
	e := newEngine(t, id, dsl)
	r := send(t, context.Background(), e, "hi", nil, true)
	end := oneTerminal(t, r, types.Failure)
	var re *agent.RunError
	if !errors.As(end.err, &re) || re.Code != agent.CodeLLM || end.msg.Metadata.GetValue("errorCode") != agent.CodeLLM {
		t.Fatalf("failure err %v, metadata %v", end.err, end.msg.Metadata.Values())
	}
	if n := countTypes(&r.rec, events.RunError); n != 1 {
		t.Fatalf("%d RUN_ERROR events", n)
	}
	checkEvents(t, &r.rec)
}

func TestClientCancelThroughRuleGo(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: "slow", ChunkDelay: 5 * time.Second}))
	id, dsl := agentChain(t, srv.URL, nil)
	e := newEngine(t, id, dsl)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(150*time.Millisecond, cancel)
	start := time.Now()
	r := send(t, ctx, e, "hi", nil, true)
	end := oneTerminal(t, r, types.Failure)
	if end.msg.Metadata.GetValue("errorCode") != agent.CodeCancelled || time.Since(start) > 30*time.Second { // a hang, not a figure
		t.Fatalf("code %q after %v", end.msg.Metadata.GetValue("errorCode"), time.Since(start))
	}
	checkEvents(t, &r.rec)
}

func TestStepExhaustionAndDoomLoopThroughRuleGo(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if _, final := r.JSON["tool_choice"]; final {
			return llmtest.Reply("Forced answer.")
		}
		return llmtest.Calls(llmtest.Call("test_add", `{"a":1,"b":1}`))
	}))
	id, dsl := agentChain(t, srv.URL, map[string]any{"maxStep": 4, "tools": []any{map[string]any{"type": "builtin", "name": "test_add"}}})
	e := newEngine(t, id, dsl)
	before := testAddCalls.Load()
	r := send(t, context.Background(), e, "loop", nil, true)
	end := oneTerminal(t, r, types.Success)
	md := end.msg.Metadata
	if end.msg.GetData() != "Forced answer." || md.GetValue("truncated") != "true" || md.GetValue("steps") != "5" {
		t.Fatalf("%q %v", end.msg.GetData(), md.Values())
	}
	// The doom-loop guard let the identical call run twice, then refused it.
	if got := testAddCalls.Load() - before; got != 2 {
		t.Fatalf("test_add ran %d times", got)
	}
	checkEvents(t, &r.rec)
}

func TestRetryAndFailoverThroughRuleGo(t *testing.T) {
	flaky := llmtest.NewServer(t, llmtest.Flaky(1, 503, llmtest.Always(llmtest.Reply("after a retry"))))
	id, dsl := agentChain(t, flaky.URL, map[string]any{"maxRetries": 2})
	r := send(t, context.Background(), newEngine(t, id, dsl), "hi", nil, true)
	if end := oneTerminal(t, r, types.Success); end.msg.GetData() != "after a retry" || len(flaky.Requests()) != 2 {
		t.Fatalf("%q, %d requests", end.msg.GetData(), len(flaky.Requests()))
	}
	checkEvents(t, &r.rec)

	down := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Status: 502, ErrorMessage: "bad gateway"}))
	backup := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("from backup")))
	id, dsl = agentChain(t, down.URL, map[string]any{"maxRetries": 1,
		"failover": []any{map[string]any{"url": backup.URL, "model": "backup-model", "key": "sk-backup-key-99999"}}})
	r = send(t, context.Background(), newEngine(t, id, dsl), "hi", nil, true)
	end := oneTerminal(t, r, types.Success)
	if end.msg.GetData() != "from backup" || end.msg.Metadata.GetValue("model") != "backup-model" || backup.LastRequest().Model != "backup-model" {
		t.Fatalf("%q %v", end.msg.GetData(), end.msg.Metadata.Values())
	}
	checkEvents(t, &r.rec)
}

func TestNoLLMConfigured(t *testing.T) {
	id, dsl := agentChain(t, "${global.llm_url}", map[string]any{"model": "${global.model}"})
	e := newEngine(t, id, dsl) // loads: a missing LLM is not a load error
	r := send(t, context.Background(), e, "hi", nil, false)
	end := oneTerminal(t, r, types.Failure)
	for _, want := range []string{"OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "url", "model"} {
		if !strings.Contains(end.err.Error(), want) {
			t.Fatalf("error %q does not mention %s", end.err, want)
		}
	}
	if end.msg.Metadata.GetValue("errorCode") != CodeNoLLM {
		t.Fatalf("errorCode %q", end.msg.Metadata.GetValue("errorCode"))
	}
}

func countTypes(rec *events.Recorder, ty events.Type) int {
	n := 0
	for _, x := range rec.Types() {
		if x == ty {
			n++
		}
	}
	return n
}
