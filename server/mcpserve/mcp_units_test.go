package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/state/tasks"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// TestChainRunAsksSeveralQuestionsAtOnce: questions asked by parallel
// branches of a run are put to the client together, each under its own
// key, and each branch gets its own answer.
func TestChainRunAsksSeveralQuestionsAtOnce(t *testing.T) {
	waiting, err := newWaitingRuns(time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	ct := &chainTools{waiting: waiting}
	r := &chainRun{id: "r1", chain: "c", done: make(chan struct{}), wake: make(chan struct{}, 1), progress: newProgressSink(time.Second)}
	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	defer r.cancel(nil)
	answers := make(chan string, 2)
	for _, q := range []ask.Question{
		{ID: "size", Message: "Which size?"},
		{ID: "size", Message: "Which size for the second item?"}, // the same key: kept apart
	} {
		go func() {
			a, err := r.Ask(r.ctx, q)
			if err != nil {
				answers <- err.Error()
				return
			}
			answers <- q.Message + " " + string(a.Action)
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); len(r.questions()) < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the two questions were never asked")
		}
	}
	out := ct.askClient(r, ToolCall{Modern: true, CanElicit: true}, r.questions())
	if len(out.Questions) != 2 || out.Questions[0].Key() == out.Questions[1].Key() || out.State == "" {
		t.Fatalf("outcome %+v", out)
	}
	if err := r.answer(map[string]json.RawMessage{
		out.Questions[0].Key(): json.RawMessage(`{"action":"accept"}`),
		out.Questions[1].Key(): json.RawMessage(`{"action":"decline"}`),
	}); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{<-answers: true, <-answers: true}
	if len(got) != 2 || len(r.questions()) != 0 {
		t.Fatalf("answers %v, still open %v", got, r.questions())
	}
}

// TestStdioCodeWriter: only a -32603 answer whose message is a pending
// protocol error is rewritten, once; other lines pass unchanged.
func TestStdioCodeWriter(t *testing.T) {
	var out strings.Builder
	pending := &stdioErrors{byMessage: map[string][]*ProtocolError{}}
	w := &stdioCodeWriter{out: &out, pending: pending, calls: newOpenCalls()}
	internal := func(id int, msg string) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32603, "message": msg}})
		return string(b) + "\n"
	}
	write := func(line string) string {
		out.Reset()
		if n, err := w.Write([]byte(line)); err != nil || n != len(line) {
			t.Fatalf("write: %d %v", n, err)
		}
		return out.String()
	}
	if got := write(internal(1, "bad state")); got != internal(1, "bad state") {
		t.Fatalf("nothing pending, yet rewritten: %s", got)
	}
	pending.add(&ProtocolError{Code: CodeInvalidParams, Message: "bad state", Data: map[string]any{"why": "signature"}})
	if got := write(internal(2, "something else")); got != internal(2, "something else") {
		t.Fatalf("another message rewritten: %s", got)
	}
	if got := write(`{"jsonrpc":"2.0","id":3,"result":{"text":"\"code\":-32603"}}` + "\n"); !strings.Contains(got, `"result"`) {
		t.Fatalf("a result rewritten: %s", got)
	}
	want := `{"error":{"code":-32602,"data":{"why":"signature"},"message":"bad state"},"id":4,"jsonrpc":"2.0"}` + "\n"
	if got := write(internal(4, "bad state")); got != want {
		t.Fatalf("rewritten as %s, want %s", got, want)
	}
	if !pending.empty() {
		t.Fatal("the error is still pending after its answer")
	}
	if got := write(internal(5, "bad state")); got != internal(5, "bad state") {
		t.Fatalf("an error rewritten twice: %s", got)
	}
}

// TestMCPTaskListenChoosesTasks: a stream watches at most MaxListenTasks
// tasks, only those its caller may see (another user's task is left out,
// as one that never existed), and sends each one's state at once; it
// ends, unanswered, when its client leaves.
func TestMCPTaskListenChoosesTasks(t *testing.T) {
	shared := tasks.NewMemory()
	m, err := newMCPTasks(shared, time.Hour, time.Minute, 10, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.close)
	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	ids := []string{"task-bobs"}
	if err := shared.Create(ctx, &tasks.Task{ID: "task-bobs", Owner: "bob", Status: tasks.Working, TTL: time.Hour, Alive: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i := range MaxListenTasks + 1 {
		id := fmt.Sprintf("task-ada-%03d", i)
		ids = append(ids, id, id) // named twice: watched once
		if err := shared.Create(ctx, &tasks.Task{ID: id, Owner: "ada", Status: tasks.Working, TTL: time.Hour, Alive: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := make(chan map[string]any, 2*MaxListenTasks)
	ended := make(chan bool, 1)
	ada := identity.Principal{User: "ada", Method: identity.MethodKey}
	go func() {
		ended <- m.listen(ctx, json.RawMessage(`"sub"`), ids, ada, func(b []byte) error {
			var msg map[string]any
			if err := json.Unmarshal(b, &msg); err != nil {
				return err
			}
			msgs <- msg
			return nil
		})
	}()
	ack := <-msgs
	watched := ack["params"].(map[string]any)["notifications"].(map[string]any)["taskIds"].([]any)
	if len(watched) != MaxListenTasks || watched[0] != "task-ada-000" || watched[MaxListenTasks-1] != fmt.Sprintf("task-ada-%03d", MaxListenTasks-1) {
		t.Fatalf("watched %d: %v…", len(watched), watched[:3])
	}
	for range MaxListenTasks {
		if n := <-msgs; n["method"] != "notifications/tasks" || n["params"].(map[string]any)["status"] != "working" {
			t.Fatalf("a task's state: %v", n)
		}
	}
	leave()
	if answered := <-ended; answered {
		t.Fatal("a stream whose client left is answered")
	}
}

// TestWaitingRunsCloseEndsThem: closing the service ends the runs waiting
// in this process for a client's answer (with ErrServerClosed), so that
// the engines stop at once.
func TestWaitingRunsCloseEndsThem(t *testing.T) {
	waiting, err := newWaitingRuns(time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	r := &chainRun{id: "r1", chain: "c", done: make(chan struct{}), wake: make(chan struct{}, 1), progress: newProgressSink(time.Second)}
	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	go func() { <-r.ctx.Done(); close(r.done) }() // the run ends when cancelled
	if _, err := waiting.hold(r); err != nil {
		t.Fatal(err)
	}
	waiting.close()
	if !errors.Is(context.Cause(r.ctx), ErrServerClosed) {
		t.Fatalf("the waiting run's cause: %v, want ErrServerClosed", context.Cause(r.ctx))
	}
	if _, err := waiting.hold(r); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("hold after close: %v", err)
	}
}

// nameSchema asks for a name.
var nameSchema = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}

// TestDecodeAnswer: what counts as an answer to a question.
func TestDecodeAnswer(t *testing.T) {
	schema, _ := json.Marshal(nameSchema)
	q := ask.Question{Message: "Name?", Schema: schema}
	for _, tc := range []struct {
		raw    string
		action ask.Action
		ok     bool
	}{
		{`{"action":"accept","content":{"name":"Ada"}}`, ask.Accept, true},
		{`{"action":"decline"}`, ask.Decline, true},
		{`{"action":"cancel","content":{"junk":1}}`, ask.Cancel, true},
		{`{"action":"accept"}`, "", false},
		{`{"action":"accept","content":{"name":3}}`, "", false},
		{`{"action":"accept","content":"Ada"}`, "", false},
		{`{"action":"maybe"}`, "", false},
		{`12345`, "", false},
	} {
		a, err := decodeAnswer(json.RawMessage(tc.raw), q)
		if (err == nil) != tc.ok || a.Action != tc.action {
			t.Errorf("%s: %+v, %v", tc.raw, a, err)
		}
	}
	if a, err := decodeAnswer(json.RawMessage(`{"action":"accept"}`), ask.Question{Message: "OK?"}); err != nil || a.Action != ask.Accept {
		t.Errorf("a confirmation needs no content: %+v, %v", a, err)
	}
}
