package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

func TestTextAnswerStreamAndSync(t *testing.T) {
	for _, stream := range []bool{true, false} {
		h := newHarness(t, llmtest.Always(llmtest.Response{Text: "Hello there, friend.", Reasoning: "The user greets me."}))
		h.stream = stream
		out, rec, err := h.run(context.Background(), "hi")
		if err != nil {
			t.Fatal(err)
		}
		if out.Content != "Hello there, friend." || out.Reasoning != "The user greets me." || out.Steps != 1 || out.Truncated {
			t.Fatalf("stream=%v: %+v", stream, out.RunOutput)
		}
		if out.Usage.TotalTokens == 0 || out.Model != "test-model" {
			t.Fatalf("usage/model missing: %+v", out.RunOutput)
		}
		req := h.srv.LastRequest()
		if req.Stream != stream || (stream && !req.IncludeUsage) {
			t.Fatalf("request stream=%v include_usage=%v", req.Stream, req.IncludeUsage)
		}
		if req.Messages[0].Role != "system" || req.Messages[0].Content != "You are a test agent." {
			t.Fatalf("system prompt not first: %+v", req.Messages)
		}
		contents := countType(rec, events.TextMessageContent)
		if stream && contents < 3 {
			t.Fatalf("stream mode sent %d content deltas; want every chunk", contents)
		}
		if !stream && contents != 1 {
			t.Fatalf("sync mode sent %d content events", contents)
		}
		if countType(rec, events.ReasoningMessageContent) == 0 {
			t.Fatal("no reasoning events")
		}
		last := rec.Events()[len(rec.Events())-1]
		if last.Type != events.RunFinished || string(last.Result) != `"Hello there, friend."` || len(last.Usage) != 1 {
			t.Fatalf("RUN_FINISHED: %+v", last)
		}
	}
}

func TestToolLoopAndParallelCalls(t *testing.T) {
	h := newHarness(t, llmtest.Sequence(
		llmtest.Calls(llmtest.Call("add", `{"a":1,"b":2}`)),
		llmtest.Calls(llmtest.Call("add", `{"a":3,"b":4}`), llmtest.Call("add", `{"a":5,"b":6}`)),
		llmtest.Reply("The sums are 3, 7 and 11."),
	))
	h.tools = []string{"add"}
	out, rec, err := h.run(context.Background(), "add things")
	if err != nil {
		t.Fatal(err)
	}
	if out.Steps != 3 || out.ToolCalls != 3 || h.calls.get("add") != 3 || out.Content != "The sums are 3, 7 and 11." {
		t.Fatalf("%+v calls=%d", out.RunOutput, h.calls.get("add"))
	}
	reqs := h.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	results := reqs[2].ToolResults()
	if len(results) != 2 || results[0].Content != "7" || results[1].Content != "11" {
		t.Fatalf("tool results sent back: %+v", results)
	}
	if names := reqs[0].ToolNames(); len(names) != 1 || names[0] != "add" {
		t.Fatalf("tools offered: %v", names)
	}
	if countType(rec, events.ToolCallStart) != 3 || countType(rec, events.ToolCallResult) != 3 || countType(rec, events.ToolCallEnd) != 3 {
		t.Fatalf("tool events: %v", rec.Types())
	}
	// Streamed calls carry the provider's ids, announced once.
	for _, e := range rec.Events() {
		if e.Type == events.ToolCallStart && (e.ToolCallID == "" || e.ParentMessageID == "") {
			t.Fatalf("TOOL_CALL_START without ids: %+v", e)
		}
	}
}

func TestSequentialToolCalls(t *testing.T) {
	h := newHarness(t, llmtest.Sequence(
		llmtest.Calls(llmtest.Call("add", `{"a":1,"b":1}`), llmtest.Call("add", `{"a":2,"b":2}`)),
		llmtest.Reply("done"),
	))
	h.tools = []string{"add"}
	h.cfg.ParallelToolCalls = false
	if _, _, err := h.run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if got := h.srv.Requests()[0].JSON["parallel_tool_calls"]; got != nil {
		t.Fatalf("parallel_tool_calls sent with one tool: %v", got)
	}
}

func TestMidStreamError(t *testing.T) {
	for name, resp := range map[string]llmtest.Response{
		"broken":      {Text: "This answer will be cut off in the middle", ChunkSize: 3, BreakAfter: 4},
		"error event": {Text: "partial", ErrorEvent: "upstream exploded"},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, llmtest.Always(resp))
			h.llm.MaxRetries = 2
			_, rec, err := h.run(context.Background(), "hi")
			var re *RunError
			if !errors.As(err, &re) || re.Code != CodeLLM {
				t.Fatalf("err = %v", err)
			}
			// Text had reached the client: no retry, which would duplicate it.
			if n := len(h.srv.Requests()); n != 1 {
				t.Fatalf("%d requests after a mid-stream failure", n)
			}
			if countType(rec, events.RunError) != 1 || countType(rec, events.RunFinished) != 0 {
				t.Fatalf("events: %v", rec.Types())
			}
		})
	}
}

func TestRetryThenSuccess(t *testing.T) {
	h := newHarness(t, llmtest.Flaky(2, 503, llmtest.Always(llmtest.Reply("finally"))))
	h.llm.MaxRetries = 2
	out, rec, err := h.run(context.Background(), "hi")
	if err != nil || out.Content != "finally" {
		t.Fatalf("%v %v", out, err)
	}
	if n := len(h.srv.Requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	if countType(rec, events.Custom) != 2 {
		t.Fatalf("want 2 retry events: %v", rec.Types())
	}
	// Retries exhausted: the error says what the server said.
	h2 := newHarness(t, llmtest.Always(llmtest.Response{Status: 429, ErrorMessage: "slow down"}))
	h2.llm.MaxRetries = 1
	_, _, err = h2.run(context.Background(), "hi")
	var le *LLMError
	if !errors.As(err, &le) || le.Status != 429 || !strings.Contains(err.Error(), "slow down") || len(h2.srv.Requests()) != 2 {
		t.Fatalf("err = %v, requests = %d", err, len(h2.srv.Requests()))
	}
	// A non-retryable status is not retried.
	h3 := newHarness(t, llmtest.Always(llmtest.Response{Status: 400, ErrorMessage: "bad request"}))
	h3.llm.MaxRetries = 3
	if _, _, err := h3.run(context.Background(), "hi"); err == nil || len(h3.srv.Requests()) != 1 {
		t.Fatalf("400 retried: %d requests", len(h3.srv.Requests()))
	}
}

func TestFailover(t *testing.T) {
	for _, status := range []int{500, 401} {
		primary := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Status: status, ErrorMessage: "primary down"}))
		backup := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("from the backup")))
		h := newHarness(t, llmtest.Always(llmtest.Reply("unused")))
		h.llm = LLMConfig{Endpoints: []Endpoint{{URL: primary.URL, Model: "m1"}, {URL: backup.URL, Model: "m2"}},
			MaxRetries: 1, RetryBackoff: time.Millisecond, CircuitCooldown: time.Minute}
		a := h.agent()
		for i := 0; i < 2; i++ {
			var rec events.Recorder
			out, err := a.Run(context.Background(), Input{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}}, Stream: true}, &rec)
			checkStream(t, &rec)
			if err != nil || out.Content != "from the backup" || out.Model != "m2" {
				t.Fatalf("status %d run %d: %v %v", status, i, out, err)
			}
		}
		if backup.LastRequest().Model != "m2" {
			t.Fatalf("backup got model %q", backup.LastRequest().Model)
		}
		// 500: one retry then failover; 401: straight to failover. The
		// second run skips the primary while its circuit is open.
		want := 2
		if status == 401 {
			want = 1
		}
		if n := len(primary.Requests()); n != want {
			t.Fatalf("status %d: primary got %d requests, want %d", status, n, want)
		}
	}
}

func TestClientCancel(t *testing.T) {
	h := newHarness(t, llmtest.Always(llmtest.Response{Hang: true}))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, _, err := h.run(ctx, "hi")
	var re *RunError
	// The bound only catches a run that ignores the cancel (the LLM hangs
	// forever); it is no timing figure.
	if !errors.As(err, &re) || re.Code != CodeCancelled || time.Since(start) > 30*time.Second {
		t.Fatalf("err=%v after %v", err, time.Since(start))
	}

	// A cancel while a tool runs stops the tool too.
	h2 := newHarness(t, llmtest.Sequence(llmtest.Calls(llmtest.Call("slow", `{}`)), llmtest.Reply("unreachable")))
	h2.tools = []string{"slow"}
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel2)
	_, _, err = h2.run(ctx2, "hi")
	if !errors.As(err, &re) || re.Code != CodeCancelled || h2.calls.get("slow-cancelled") != 1 {
		t.Fatalf("err=%v cancelled=%d", err, h2.calls.get("slow-cancelled"))
	}
}

func TestRunTimeout(t *testing.T) {
	h := newHarness(t, llmtest.Always(llmtest.Response{Hang: true}))
	h.cfg.Timeout = 150 * time.Millisecond
	_, rec, err := h.run(context.Background(), "hi")
	var re *RunError
	if !errors.As(err, &re) || re.Code != CodeTimeout {
		t.Fatalf("err=%v", err)
	}
	if e := rec.Events()[len(rec.Events())-1]; e.Code != CodeTimeout {
		t.Fatalf("RUN_ERROR code %q", e.Code)
	}
}

func TestStepExhaustionForcesAnswer(t *testing.T) {
	h := newHarness(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if _, ok := r.JSON["tool_choice"]; ok {
			return llmtest.Reply("Partial answer: the sum so far is 6.")
		}
		return llmtest.Calls(llmtest.Call("add", `{"a":`+strings.Repeat("1", r.Turn()+1)+`,"b":1}`))
	}))
	h.tools = []string{"add"}
	h.cfg.MaxStep = 3
	out, _, err := h.run(context.Background(), "loop forever")
	if err != nil {
		t.Fatal(err)
	}
	if !out.Truncated || out.Steps != 4 || out.Content != "Partial answer: the sum so far is 6." {
		t.Fatalf("%+v", out.RunOutput)
	}
	last := h.srv.LastRequest()
	if last.JSON["tool_choice"] != "none" || !strings.Contains(last.Messages[len(last.Messages)-1].Content, "Do not call any more tools") {
		t.Fatalf("final request: %v", last.JSON["tool_choice"])
	}
	// A model that still answers with nothing gets a stated answer.
	h2 := newHarness(t, llmtest.Always(llmtest.Calls(llmtest.Call("add", `{"a":1,"b":1}`))))
	h2.tools = []string{"add"}
	h2.cfg.MaxStep = 1
	h2.cfg.RepeatLimit = -1
	out, _, err = h2.run(context.Background(), "x")
	if err != nil || !out.Truncated || !strings.Contains(out.Content, "stopped after 1 step without") {
		t.Fatalf("%v %+v", err, out)
	}
}

func TestDoomLoopRefused(t *testing.T) {
	h := newHarness(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if res := r.ToolResults(); len(res) > 0 && strings.Contains(res[0].Content, "repeated_call") {
			return llmtest.Reply("I will stop repeating myself.")
		}
		return llmtest.Calls(llmtest.Call("add", `{"a":1,"b":1}`))
	}))
	h.tools = []string{"add"}
	out, rec, err := h.run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if h.calls.get("add") != 2 || out.Content != "I will stop repeating myself." {
		t.Fatalf("add ran %d times; %q", h.calls.get("add"), out.Content)
	}
	var refused bool
	for _, e := range rec.Events() {
		if e.Type == events.ToolCallResult && e.Meta.ErrorKind == "repeated_call" && e.Meta.IsError {
			refused = true
		}
	}
	if !refused {
		t.Fatal("no refused TOOL_CALL_RESULT")
	}
}

func TestReusedToolCallIDsAreMadeUnique(t *testing.T) {
	for _, stream := range []bool{true, false} {
		call := func(args string) llmtest.ToolCall { c := llmtest.Call("add", args); c.ID = "call_0"; return c }
		h := newHarness(t, llmtest.Sequence(
			llmtest.Calls(call(`{"a":1,"b":1}`)),
			llmtest.Calls(call(`{"a":2,"b":2}`)),
			llmtest.Reply("done"),
		))
		h.tools, h.stream = []string{"add"}, stream
		if _, _, err := h.run(context.Background(), "x"); err != nil {
			t.Fatal(err)
		}
		last := h.srv.LastRequest()
		var ids []string
		for _, m := range last.Messages {
			for _, tc := range m.ToolCalls {
				ids = append(ids, tc.ID)
			}
			if m.Role == "tool" {
				ids = append(ids, "result:"+m.ToolCallID)
			}
		}
		if strings.Join(ids, ",") != "call_0,result:call_0,call_0_2,result:call_0_2" {
			t.Fatalf("stream=%v: conversation ids %v", stream, ids)
		}
	}
}
