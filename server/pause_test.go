package server

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
	bolt "go.etcd.io/bbolt"

	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/state/checkpoint"
)

// sharedBolt is one bbolt file whose checkpoint stores stand for the
// processes of one machine, one after the other: each is its only live
// replica.
func sharedBolt(t *testing.T) func(replica string) checkpoint.Store {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return func(replica string) checkpoint.Store {
		s, err := checkpoint.NewBolt(db, func(_ context.Context, id string) (bool, error) { return id == replica, nil })
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// resumeRun answers the one interrupt of a run over the run route.
func resumeRun(t *testing.T, e *apiEnv, runID, interrupt string, payload map[string]any) runAnswer {
	t.Helper()
	code, body, _ := e.do("POST", "/api/v1/runs/"+runID+"/resume", map[string]any{"resume": []any{
		map[string]any{"interruptId": interrupt, "status": "resolved", "payload": payload}}})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil {
		t.Fatalf("resume: %d %s", code, body)
	}
	return ans
}

// A run paused by one process is answered by the next on the same state
// file, with what the thread's person approved "always" before the pause:
// the same call later in the run runs without asking.
func TestPausedRunGoesOnInTheNextProcess(t *testing.T) {
	stores := sharedBolt(t)
	first := newAPIEnvWith(t, Options{}, StoreOptions{Checkpoints: stores("first"), Replica: "first"})
	dsl := chainDSL("again", "Again", nil, agentNode(promptAgain, map[string]any{"parallelToolCalls": false,
		"approval": map[string]any{"tools": []any{"look*"}}, "tools": []any{lookupTool()}}))
	if code, body, _ := first.do("PUT", "/api/v1/chains/again", dsl); code != 200 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	code, body, _ := first.do("POST", "/api/v1/chains/again/run", map[string]any{"input": "go", "threadId": "t-again", "runId": "run-again"})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
		t.Fatalf("run: %d %s", code, body)
	}
	// A-1 approved always; the run pauses again on B-2.
	ans = resumeRun(t, first, "run-again", ans.Interrupts[0].ID, map[string]any{"approved": true, "always": true})
	if ans.Outcome != "interrupt" || !strings.Contains(string(ans.Interrupts[0].Metadata), "B-2") {
		t.Fatalf("after always: %+v", ans)
	}

	next := newAPIEnvWith(t, Options{}, StoreOptions{Checkpoints: stores("next"), Replica: "next"})
	if code, body, _ := next.do("PUT", "/api/v1/chains/again", dsl); code != 200 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	_, list, _ := next.do("GET", "/api/v1/runs", nil)
	if !strings.Contains(string(list), `"status":"waiting"`) || !strings.Contains(string(list), ans.Interrupts[0].ID) {
		t.Fatalf("runs of the next process: %s", list)
	}
	// B-2 approved; then A-1 again, approved always before the pause.
	ans = resumeRun(t, next, "run-again", ans.Interrupts[0].ID, map[string]any{"approved": true})
	if ans.Outcome != "success" || ans.Data != `last: {"found":"A-1"}` {
		t.Fatalf("the run in the next process: %+v", ans)
	}
}

// Two interrupts of one turn, the first expired: the run goes on without a
// client (the expired call denied, the other still waiting), pauses again
// on the other; the answer to it brings what happened meanwhile, in order,
// then the rest of the run.
func TestOneOfTwoInterruptsExpires(t *testing.T) {
	e := newAPIEnv(t, Options{})
	// Parallel calls: both wait at once.
	dsl := chainDSL("double", "Double", nil, agentNode(promptDouble, map[string]any{"parallelToolCalls": true,
		"approval": map[string]any{"tools": []any{"look*"}, "timeout": "1h"}, "tools": []any{lookupTool()}}))
	if code, body, _ := e.do("PUT", "/api/v1/chains/double", dsl); code != 200 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	code, body, _ := e.do("POST", "/api/v1/chains/double/run", map[string]any{"input": "both", "runId": "run-two"})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" || len(ans.Interrupts) != 2 {
		t.Fatalf("run: %d %s", code, body)
	}
	// The first interrupt's time is up.
	ctx := t.Context()
	cp, err := e.store.checkpoints.Load(ctx, "run-two")
	if err != nil {
		t.Fatal(err)
	}
	state, _ := checkpoint.Decode(cp.Data)
	expired := state.Find(ans.Interrupts[0].ID)
	expired.Expires = time.Now().Add(-time.Second)
	if cp.Data, err = checkpoint.Encode(state); err != nil {
		t.Fatal(err)
	}
	if err := e.store.checkpoints.Save(ctx, cp); err != nil {
		t.Fatal(err)
	}
	e.store.expire("run-two")
	var left *checkpoint.State
	deadline := time.Now().Add(10 * time.Second)
	for left == nil || len(left.Pending) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not pause again on the other interrupt: %+v", left)
		}
		time.Sleep(50 * time.Millisecond)
		_, left, _ = e.store.paused(ctx, "run-two")
	}
	if left.Pending[0].Interrupt.ID != ans.Interrupts[1].ID {
		t.Fatalf("pauses again on %s, want %s", left.Pending[0].Interrupt.ID, ans.Interrupts[1].ID)
	}
	// A late answer to the expired one is refused.
	code, body, _ = e.do("POST", "/api/v1/runs/run-two/resume", map[string]any{"resume": []any{
		map[string]any{"interruptId": ans.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}})
	if code != 409 {
		t.Fatalf("an answer to the expired interrupt: %d %s", code, body)
	}
	code, body, _ = e.do("POST", "/api/v1/runs/run-two/resume", map[string]any{"stream": true, "resume": []any{
		map[string]any{"interruptId": ans.Interrupts[1].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}})
	raw := sseEvents(t, body)
	for _, v := range aguicheck.Check(raw) {
		t.Errorf("AG-UI violation: %v", v)
	}
	all := string(body)
	denied, ran, end := strings.Index(all, "nobody answered within 1h"), strings.Index(all, `"content":"{\"found\":`), strings.Index(all, `"result":"Both:`)
	if code != 200 || denied < 0 || ran < denied || end < ran {
		t.Fatalf("the answer's stream (the denial, then the approved call, then the end): %d %s", code, body)
	}
}

// A paused run is cancelled where it is kept: nobody can answer it after.
func TestCancelAPausedRun(t *testing.T) {
	e := newAPIEnv(t, Options{})
	code, body, _ := e.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "runId": "run-c"})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
		t.Fatalf("run: %d %s", code, body)
	}
	if code, body, _ := e.do("POST", "/api/v1/runs/run-c/cancel", nil); code != 202 || !strings.Contains(string(body), `"cancelled":true`) {
		t.Fatalf("cancel: %d %s", code, body)
	}
	if _, list, _ := e.do("GET", "/api/v1/runs", nil); strings.TrimSpace(string(list)) != "[]" {
		t.Errorf("runs after the cancel: %s", list)
	}
	code, _, _ = e.do("POST", "/api/v1/runs/run-c/resume", map[string]any{"resume": []any{
		map[string]any{"interruptId": ans.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}})
	if code != 409 {
		t.Errorf("an answer after the cancel: %d", code)
	}
	if code, _, _ := e.do("POST", "/api/v1/runs/run-c/cancel", nil); code != 404 {
		t.Errorf("a second cancel: %d", code)
	}
}

// failingCheckpoints cannot save.
type failingCheckpoints struct{ checkpoint.Store }

var errDiskFull = errors.New("disk full")

func (failingCheckpoints) Save(context.Context, *checkpoint.Checkpoint) error { return errDiskFull }

// A run that pauses and cannot be kept fails, saying why: its interrupts
// could never be answered.
func TestAPauseThatCannotBeKeptFails(t *testing.T) {
	e := newAPIEnvWith(t, Options{}, StoreOptions{Checkpoints: failingCheckpoints{checkpoint.NewMemory(nil)}})
	code, body, _ := e.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "stream": true})
	evs := sseEvents(t, body)
	last := string(evs[len(evs)-1])
	if code != 200 || !strings.Contains(last, `"type":"RUN_ERROR"`) || !strings.Contains(last, codeNotPaused) || !strings.Contains(last, "disk full") {
		t.Fatalf("%d %s", code, body)
	}
}

// A process that starts goes on with the paused runs of the one before
// it whose interrupts expired: nobody's answer is a denial.
func TestExpiryOfARunPausedByTheProcessBefore(t *testing.T) {
	stores := sharedBolt(t)
	llm := llmtest.NewServer(t, apiScript())
	dir := t.TempDir()
	cfg := NewConfig(map[string]string{"llm_url": llm.URL, "api_key": "sk-test", "model": "test-model"})
	before, errs := OpenStoreWith(dir, cfg, StoreOptions{Checkpoints: stores("before")})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for id, dsl := range testChains() {
		if _, err := before.Deploy([]byte(strings.Replace(dsl, `"timeout": "3s"`, `"timeout": "1s"`, 1)), id); err != nil {
			t.Fatal(err)
		}
	}
	res, err := before.Run(t.Context(), RunRequest{ChainID: "guarded", Input: "lookup it", RunID: "run-before", Interruptible: true})
	if err != nil || res.Outcome != OutcomeInterrupt {
		t.Fatalf("run: %+v %v", res, err)
	}
	before.Close()

	after, _ := OpenStoreWith(dir, cfg, StoreOptions{Checkpoints: stores("after")})
	t.Cleanup(after.Close)
	for id, dsl := range testChains() {
		if _, err := after.Deploy([]byte(dsl), id); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var denied bool
		for _, r := range llm.Requests() {
			for _, m := range r.ToolResults() {
				denied = denied || strings.Contains(m.Content, "nobody answered within 1s")
			}
		}
		if list, _ := after.checkpoints.List(t.Context()); denied && len(list) == 0 && after.runs.Active() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the next process did not go on with the expired run")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// probeNode records, each time it runs, whether the paused run of its
// message's parent run was still kept: an approved call must run only
// once its pause is gone.
type probeNode struct{}

var probes = struct {
	sync.Mutex
	store *Store
	runs  []bool // each run: the pause was gone
}{}

func (*probeNode) Type() string                                 { return "test/probe" }
func (*probeNode) New() types.Node                              { return &probeNode{} }
func (*probeNode) Init(types.Config, types.Configuration) error { return nil }
func (*probeNode) Destroy()                                     {}
func (*probeNode) OnMsg(ctx types.RuleContext, msg types.RuleMsg) {
	probes.Lock()
	_, err := probes.store.checkpoints.Load(context.Background(), msg.Metadata.GetValue("parentRunId"))
	probes.runs = append(probes.runs, errors.Is(err, checkpoint.ErrNotFound))
	probes.Unlock()
	ctx.TellSuccess(msg)
}

func init() { _ = rulego.Registry.Register(&probeNode{}) }

// An approved call runs once, and only after its paused run was taken
// away for good: of answers sent at once, one goes on with the run; none
// of the others, nor a replay, can run the call again.
func TestApprovedCallRunsOnceAfterItsPauseIsGone(t *testing.T) {
	e := newAPIEnv(t, Options{})
	probes.Lock()
	probes.store, probes.runs = e.store, nil
	probes.Unlock()
	probe := `{"ruleChain": {"id": "probe", "name": "Probe"}, "metadata": {"firstNodeIndex": 0, "connections": [],
		"nodes": [{"id": "p", "type": "test/probe", "name": "Probe"}]}}`
	guarded := chainDSL("guarded-probe", "Guarded probe", nil, agentNode(promptGuard, map[string]any{
		"approval": map[string]any{"tools": []any{"lookup"}},
		"tools": []any{map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks a key up.", "targetId": "probe",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}}}}}))
	for id, dsl := range map[string]string{"probe": probe, "guarded-probe": guarded} {
		if code, body, _ := e.do("PUT", "/api/v1/chains/"+id, dsl); code != 200 {
			t.Fatalf("deploy %s: %d %s", id, code, body)
		}
	}
	code, body, _ := e.do("POST", "/api/v1/chains/guarded-probe/run", map[string]any{"input": "lookup it", "runId": "run-probe"})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
		t.Fatalf("run: %d %s", code, body)
	}
	answer := map[string]any{"resume": []any{map[string]any{"interruptId": ans.Interrupts[0].ID, "status": "resolved",
		"payload": map[string]any{"approved": true}}}}
	var wg sync.WaitGroup
	codes := make([]int, 5)
	for i := range codes {
		wg.Go(func() { codes[i], _, _ = e.do("POST", "/api/v1/runs/run-probe/resume", answer) })
	}
	wg.Wait()
	if code, _, _ := e.do("POST", "/api/v1/runs/run-probe/resume", answer); code != 409 {
		t.Errorf("a replay: %d", code)
	}
	won := 0
	for _, c := range codes {
		if c == 200 {
			won++
		}
	}
	probes.Lock()
	defer probes.Unlock()
	if won != 1 || len(probes.runs) != 1 || !probes.runs[0] {
		t.Fatalf("answers %v; the call ran %d times (its pause gone each time: %v)", codes, len(probes.runs), probes.runs)
	}
}
