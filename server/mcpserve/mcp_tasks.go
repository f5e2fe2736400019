package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/state/tasks"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// TasksExtension is the MCP extension of protocol 2026-07-28 (SEP-2663)
// that lets a tool call outlive its request: the server answers a
// CreateTaskResult at once, and the client polls tasks/get for the
// status, the questions the run asks (answered with tasks/update) and
// finally its result, and may stop it with tasks/cancel.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Defaults of the task options.
const (
	defaultTaskTTL  = time.Hour
	defaultMaxTasks = 100
	// taskPollInterval is the pollIntervalMs suggested to clients, and how
	// often the replica running a task looks in the store for a cancel or
	// answers received by another replica.
	taskPollInterval = time.Second
	// taskHeartbeat is how often the replica running a task says so in
	// the store; a task whose heartbeat is older than TaskDeadAfter (its
	// replica died without ending it) is failed by the next replica that
	// reads it.
	taskHeartbeat = 5 * time.Second
	TaskDeadAfter = 3 * taskHeartbeat
)

// The ways a chain's tool runs as a task (additionalInfo.mcpTask).
const (
	taskOptional  = "optional"
	taskRequired  = "required"
	taskForbidden = "forbidden"
)

// errTaskCancelled is the cause of a run stopped by tasks/cancel.
var errTaskCancelled = errors.New("the MCP task was cancelled")

// mcpTasks runs chain tools as tasks. The task's state is in the store
// (state/tasks), readable from every replica; the run itself lives on the
// replica that started it, watched by one goroutine per task (which ends
// with the run). A cancel or answers that reach another replica are
// written to the store, and the owner's watcher picks them up within
// taskPollInterval.
type mcpTasks struct {
	store tasks.Store
	ttl   time.Duration
	poll  time.Duration
	// replica names this process in the tasks it runs.
	replica string
	timeout time.Duration // how long a task waits for answers
	beat    time.Duration // taskHeartbeat
	dead    time.Duration // TaskDeadAfter
	max     int           // tasks running here at most
	// outcome is the tool's answer to a run that ended (chainTools.outcome).
	outcome func(*chainRun) ToolOutcome
	// meta is the _meta of every result: the serverInfo 2026-07-28 asks
	// results to carry, as mcp-go puts on its own.
	meta map[string]any
	// tools pauses and resumes the runs whose chain nodes ask (see
	// mcp_tasks_pause.go).
	tools *chainTools

	// listeners are the open listen streams (mcp_tasks_listen.go).
	listeners *taskListeners

	mu     sync.Mutex
	live   map[string]*taskRun // tasks whose run is in this process
	closed bool
	wg     sync.WaitGroup
}

// taskRun is a task whose run is in this process.
type taskRun struct {
	id  string
	run *chainRun
	// canElicit: the client declared elicitation when it started the task.
	canElicit bool
	// poke wakes the watcher after local answers.
	poke chan struct{}
}

func newMCPTasks(store tasks.Store, ttl, timeout time.Duration, max int, version string, outcome func(*chainRun) ToolOutcome) (*mcpTasks, error) {
	replica, err := randomID()
	if err != nil {
		return nil, err
	}
	if store == nil {
		store = tasks.NewMemory()
	}
	if ttl <= 0 {
		ttl = defaultTaskTTL
	}
	if max <= 0 {
		max = defaultMaxTasks
	}
	meta := map[string]any{mcp.MetaKeyServerInfo: map[string]any{"name": "ruleagent", "version": version}}
	listeners := newTaskListeners(store)
	store = watchedStore{Store: store, listeners: listeners}
	return &mcpTasks{store: store, listeners: listeners, ttl: ttl, poll: taskPollInterval, replica: replica, timeout: timeout, max: max, meta: meta,
		beat: taskHeartbeat, dead: TaskDeadAfter,
		outcome: outcome, live: map[string]*taskRun{}}, nil
}

// taskSupport is how chain info's tool runs as a task.
func taskSupport(info ChainInfo) string {
	switch info.MCPTask {
	case taskRequired, taskForbidden:
		return info.MCPTask
	}
	return taskOptional
}

// full says why no task may start here now, or "" when one may.
func (m *mcpTasks) full() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.live) >= m.max {
		return fmt.Sprintf("%d tasks are already running on this server; try again later", len(m.live))
	}
	return ""
}

// start makes a started run a task, stored before the CreateTaskResult is
// answered (a tasks/get right after it finds the task, on any replica).
func (m *mcpTasks) start(ctx context.Context, tool string, run *chainRun, call ToolCall) ToolOutcome {
	id, err := randomID()
	if err != nil {
		run.cancel(err)
		return errorOutcome(err.Error())
	}
	now := time.Now()
	t := &tasks.Task{ID: "task-" + id, Owner: run.owner, Tool: tool, Replica: m.replica, Status: tasks.Working, TTL: m.ttl,
		Alive: now}
	tr := &taskRun{id: t.ID, run: run, canElicit: call.CanElicit, poke: make(chan struct{}, 1)}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		run.cancel(ErrServerClosed)
		return ToolOutcome{Err: &ProtocolError{Code: CodeInternal, Message: ErrServerClosed.Error()}}
	}
	if err := m.store.Create(ctx, t); err != nil {
		m.mu.Unlock()
		run.cancel(err)
		return ToolOutcome{Err: &ProtocolError{Code: CodeInternal, Message: "storing the task: " + err.Error()}}
	}
	m.live[t.ID] = tr
	m.wg.Add(1)
	m.mu.Unlock()
	go m.watch(tr)
	w := taskWire(t, "task")
	w["_meta"] = m.meta
	raw, err := json.Marshal(w)
	if err != nil {
		return errorOutcome(err.Error())
	}
	return ToolOutcome{Raw: raw}
}

// watch follows a task's run until it ends: it writes its questions and
// its end to the store, and applies the cancel and answers other replicas
// wrote there.
func (m *mcpTasks) watch(tr *taskRun) {
	defer m.wg.Done()
	defer func() {
		m.mu.Lock()
		delete(m.live, tr.id)
		m.mu.Unlock()
	}()
	tick := time.NewTicker(m.poll)
	defer tick.Stop()
	beat := time.Now()
	var asked string        // the questions last written, as JSON
	var waiting *time.Timer // ends a run whose questions wait too long
	defer func() {
		if waiting != nil {
			waiting.Stop()
		}
	}()
	ctx := context.WithoutCancel(tr.run.ctx)
	for {
		qs := tr.run.questions()
		if len(qs) > 0 && !tr.canElicit {
			tr.run.cancel(missingElicitation(qs))
		}
		if now := questionsJSON(qs); now != asked {
			asked = now
			m.setQuestions(ctx, tr.id, qs)
			if waiting != nil {
				waiting.Stop()
				waiting = nil
			}
			if len(qs) > 0 && m.timeout > 0 {
				waiting = time.AfterFunc(m.timeout, func() { tr.run.cancel(errInputTimeout) })
			}
		}
		select {
		case <-tr.run.done:
			if (len(tr.run.asked) == 0 && len(tr.run.interrupts) == 0) || !m.pause(ctx, tr) {
				m.finish(ctx, tr)
			}
			return
		case <-tr.run.wake:
		case <-tr.poke:
		case now := <-tick.C:
			m.pickUp(ctx, tr)
			if now.Sub(beat) >= m.beat {
				beat = now
				_, _ = m.store.Update(ctx, tr.id, func(t *tasks.Task) error {
					t.Alive = now
					return nil
				})
			}
		}
	}
}

// setQuestions writes a run's open questions: input_required with them,
// or working again when every one is answered.
func (m *mcpTasks) setQuestions(ctx context.Context, id string, qs []ask.Question) {
	_, _ = m.store.Update(ctx, id, func(t *tasks.Task) error {
		t.Changed = time.Now()
		if len(qs) == 0 {
			t.Status, t.InputRequests = tasks.Working, nil
			return nil
		}
		raw, err := inputRequests(qs)
		if err != nil {
			return err
		}
		t.Status, t.InputRequests = tasks.InputRequired, raw
		return nil
	})
}

// inputRequests are questions as a task shows them: key -> an
// elicitation/create request.
func inputRequests(qs []ask.Question) (json.RawMessage, error) {
	reqs := make(map[string]any, len(qs))
	for _, q := range qs {
		reqs[q.Key()] = map[string]any{"method": "elicitation/create", "params": elicitationParams(q)}
	}
	return json.Marshal(reqs)
}

// pickUp applies what another replica wrote for the task: a cancel, or
// answers (taken out of the store as they are delivered).
func (m *mcpTasks) pickUp(ctx context.Context, tr *taskRun) {
	t, err := m.store.Get(ctx, tr.id)
	if err != nil || (!t.CancelRequested && !t.Status.Terminal() && len(t.Responses) == 0) {
		return
	}
	if t.CancelRequested {
		tr.run.cancel(errTaskCancelled)
		return
	}
	if t.Status.Terminal() {
		// Another replica took this one for dead (its heartbeats did not
		// land): the task has ended, so has its run.
		tr.run.cancel(errReplicaGone)
		return
	}
	var taken map[string]json.RawMessage
	_, _ = m.store.Update(ctx, tr.id, func(t *tasks.Task) error {
		taken, t.Responses = t.Responses, nil
		return nil
	})
	if len(taken) > 0 {
		// The replica that took them checked them against the questions
		// (checkAnswers); an answer to a question no longer open is
		// ignored.
		_ = tr.run.answer(taken)
	}
}

// finish writes the end of a task's run: completed with the tool's result
// (a chain that failed is a completed task whose result isError, as a
// tool call's would be), failed with the protocol error that ended it, or
// cancelled.
func (m *mcpTasks) finish(ctx context.Context, tr *taskRun) {
	r := tr.run
	cause := context.Cause(r.ctx)
	// A task cancelled meanwhile stays cancelled (ErrTerminal); a store
	// that fails leaves the client a task that stays working until it
	// expires.
	_, _ = m.store.Update(ctx, tr.id, func(t *tasks.Task) error {
		t.InputRequests, t.Responses = nil, nil
		t.Changed = time.Now()
		var perr *ProtocolError
		switch {
		case errors.Is(r.err, errTaskCancelled) || errors.Is(cause, errTaskCancelled):
			t.Status = tasks.Cancelled
		case errors.As(r.err, &perr):
			t.Status, t.Error = tasks.Failed, perr.wire()
		case errors.Is(r.err, errInputTimeout), errors.Is(r.err, ErrServerClosed), errors.Is(r.err, runs.ErrShutdown):
			t.Status, t.Error = tasks.Failed, (&ProtocolError{Code: CodeInternal, Message: r.err.Error()}).wire()
		default:
			raw, err := json.Marshal(resultWire(m.outcome(r)))
			if err != nil {
				return err
			}
			t.Status, t.Result = tasks.Completed, raw
		}
		return nil
	})
}

// close cancels the tasks running here (their status becomes failed),
// waits for their watchers, and ends the listen streams.
func (m *mcpTasks) close() {
	defer m.listeners.close()
	m.mu.Lock()
	m.closed = true
	runs := make([]*chainRun, 0, len(m.live))
	for _, tr := range m.live {
		runs = append(runs, tr.run)
	}
	m.mu.Unlock()
	for _, r := range runs {
		r.cancel(ErrServerClosed)
	}
	m.wg.Wait()
}

// questionsJSON identifies a set of open questions.
func questionsJSON(qs []ask.Question) string {
	if len(qs) == 0 {
		return ""
	}
	b, _ := json.Marshal(qs)
	return string(b)
}
