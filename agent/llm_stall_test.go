package agent

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// stallFirst answers its first request with stalled and the others with
// then.
func stallFirst(stalled, then llmtest.Response) llmtest.Script {
	var n atomic.Int32
	return llmtest.ScriptFunc(func(*llmtest.Request) llmtest.Response {
		if n.Add(1) == 1 {
			return stalled
		}
		return then
	})
}

func stallHarness(t *testing.T, s llmtest.Script, first, idle time.Duration) *harness {
	h := newHarness(t, s)
	h.llm.FirstByteTimeout, h.llm.IdleTimeout, h.llm.MaxRetries = first, idle, 1
	h.cfg.Timeout = 20 * time.Second
	return h
}

// A stream that stalls before its first byte (connection open, headers
// sent, nothing else) is abandoned after firstByteTimeout and retried,
// long before the run's timeout.
func TestStallBeforeFirstByteIsRetried(t *testing.T) {
	h := stallHarness(t, stallFirst(llmtest.Response{Text: "late", Stall: time.Hour}, llmtest.Reply("on time")), 300*time.Millisecond, time.Second)
	start := time.Now()
	out, rec, err := h.run(context.Background(), "x")
	if err != nil || out.Content != "on time" {
		t.Fatalf("out %v, err %v", out, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the stalled attempt was held %v", took)
	}
	if len(h.srv.Requests()) != 2 || len(h.srv.Aborted()) != 1 {
		t.Fatalf("%d requests, %d aborted", len(h.srv.Requests()), len(h.srv.Aborted()))
	}
	retried := false
	for _, e := range rec.Events() {
		if e.Type == events.Custom && e.Name == "ruleagent.llm_retry" && strings.Contains(string(e.Value), "firstByteTimeout") {
			retried = true
		}
	}
	if !retried {
		t.Fatalf("no llm_retry event naming the stall: %v", rec.Types())
	}
}

// A stream that stalls after its text started is not retried (the text
// was shown): the run fails at once with an llm_error naming idleTimeout.
func TestStallAfterOutputFailsTheRun(t *testing.T) {
	h := stallHarness(t, llmtest.Always(llmtest.Response{Text: "one two three", ChunkSize: 4, Stall: time.Hour, StallAfter: 3}), time.Second, 300*time.Millisecond)
	start := time.Now()
	_, rec, err := h.run(context.Background(), "x")
	var re *RunError
	var stall *StallError
	if !errors.As(err, &re) || re.Code != CodeLLM || !errors.As(err, &stall) || !stall.Started || !strings.Contains(err.Error(), "idleTimeout") {
		t.Fatalf("err %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the stalled stream was held %v", took)
	}
	if len(h.srv.Requests()) != 1 {
		t.Fatalf("%d requests: a stream that showed text must not be retried", len(h.srv.Requests()))
	}
	if last := rec.Events()[len(rec.Events())-1]; last.Type != events.RunError || last.Code != CodeLLM {
		t.Fatalf("terminal %+v", last)
	}
}

// Keepalives, and a role chunk before a long silent think, are life: the
// answer may take longer than idleTimeout to start, and than
// firstByteTimeout in all, as long as no silence before it lasts
// firstByteTimeout.
func TestKeepalivesAndSlowStartsAreNotStalls(t *testing.T) {
	for name, resp := range map[string]llmtest.Response{
		"keepalives":       {Text: "thought it through", Stall: 900 * time.Millisecond, Keepalive: 100 * time.Millisecond},
		"role then silent": {Text: "thought it through", Stall: 500 * time.Millisecond, StallAfter: 1},
	} {
		t.Run(name, func(t *testing.T) {
			h := stallHarness(t, llmtest.Always(resp), 700*time.Millisecond, 200*time.Millisecond)
			out, _, err := h.run(context.Background(), "x")
			if err != nil || out.Content != "thought it through" || len(h.srv.Requests()) != 1 {
				t.Fatalf("out %v, err %v, %d requests", out, err, len(h.srv.Requests()))
			}
		})
	}
}
