package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/server/runs"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// chainRun is one run of a chain tool. It is also the run's ask.Asker: a
// node that asks for input (ask.Ask) reaches the client through it.
//
// A question a chain node asks a 2026-07-28 client pauses the run: the
// node ends its branch, and the ended run is a checkpoint in the store's
// checkpoint store (mcp_input_pause.go), answered on any replica; so does
// an agent's approval or form, as an interrupt (mcp_interrupt_pause.go). A
// question asked from inside a tool call that cannot suspend (a remote MCP
// tool's elicitation) ends the request with input_required but not the run: it waits in this
// process (waitingRuns) for the client to retry with the answers. A 2025-11-25
// client is asked with a server-initiated elicitation/create, inside the
// request.
type chainRun struct {
	id    string // random; names the run in requestState
	chain string
	// owner is the verified user who started the run (see
	// RunRequest.Owner): only they (or the operator) may answer it.
	owner string
	ctx   context.Context
	// cancel stops the run, with the reason its error reports.
	cancel   context.CancelCauseFunc
	done     chan struct{} // closed once res and err are set
	res      Result
	err      error
	progress *progressSink
	// wake is signalled (without blocking) when a question is asked.
	wake chan struct{}
	// legacy asks a 2025-11-25 client; nil for a 2026-07-28 one.
	legacy *legacyAsker
	// pausing says a question a chain node asks pauses the run as a
	// checkpoint (mcp_input_pause.go) instead of waiting in this process;
	// asked are, once the run has ended, the nodes that asked so.
	pausing bool
	asked   []components.AskedNode
	// traceparent, tracestate: its trace context, once it has asked so.
	traceparent, tracestate string
	// start are the nodes a resumed run enters the chain at.
	start []components.StartPoint
	// interruptible: the approvals and forms of its agents pause the run
	// as the run route's do (mcp_interrupt_pause.go); interrupts are then,
	// once the run has ended, those it waits for, in store run storeRun.
	// resumed is the interrupted run it goes on with.
	interruptible bool
	interrupts    []events.Interrupt
	storeRun      string
	resumed       Claimed

	mu sync.Mutex
	// round counts the input_required answers given; the requestState of
	// the latest one names it, and only that one is accepted.
	round int
	// attached is set while a request waits on the run.
	attached bool
	// open are the questions waiting for an answer, in the order asked.
	open []*openQuestion
	// early are answers the first request brought (inputResponses
	// without requestState), taken by the question with their key.
	early map[string]json.RawMessage
	// expiry cancels the run when no retry comes in time.
	expiry *time.Timer
}

// openQuestion is a question a node waits on.
type openQuestion struct {
	key    string // unique among the run's open questions
	q      ask.Question
	answer chan ask.Answer // buffered: delivering never blocks
}

// runResume is what a run goes on from: an input pause, or an interrupted
// run (claimed); neither for a new run.
type runResume struct {
	pause       *inputPause
	interrupted Claimed
}

// legacyAsker asks a 2025-11-25 client's user with elicitation/create.
type legacyAsker struct {
	peer      mcpPeer
	canElicit bool
}

// startRun starts chain id with input in the background. The run's context
// keeps the request's values (the session a legacy elicitation needs) but
// not its cancellation: the caller cancels the run when its request ends,
// unless the run is waiting for input.
//
// With pausing, a question a chain node asks pauses the run as a
// checkpoint (a plain call of a 2026-07-28 client); without it (a task, a
// 2025-11-25 client) the run waits for the answer in this process.
//
// A run resumed from an input pause (resume non-nil) is the paused run's,
// its owner's, and enters the chain at the nodes that asked, whose
// answers (call.Responses, keyed as the nodes ask) they get at once.
func (c *chainTools) startRun(ctx context.Context, id, input string, call ToolCall, pausing bool, from runResume) (*chainRun, error) {
	if c.store.Draining() {
		return nil, runs.ErrDraining
	}
	var runID, owner, traceparent, tracestate string
	var md map[string]string
	resume := from.pause
	switch {
	case resume != nil:
		runID, owner, md = resume.RunID, resume.Owner, resume.Metadata
		traceparent, tracestate = resume.Traceparent, resume.Tracestate
	case from.interrupted != nil:
		// The run goes on as the checkpoint has it (Store.goOn).
		var err error
		if runID, err = randomID(); err != nil {
			return nil, err
		}
		owner = from.interrupted.Owner()
	default:
		var err error
		if runID, err = randomID(); err != nil {
			return nil, err
		}
		md = map[string]string{"source": "mcp"}
		// MCP has no field naming a user: a run started over MCP is the
		// verified caller's (none where nobody is verified).
		p := identity.From(ctx)
		if p.Verified() {
			md["userId"] = p.User
		}
		owner = p.User
	}
	r := &chainRun{id: runID, chain: id, owner: owner, done: make(chan struct{}), wake: make(chan struct{}, 1),
		progress: newProgressSink(c.opts.TextProgressInterval), pausing: pausing && call.Modern,
		interruptible: pausing && call.Modern, resumed: from.interrupted}
	if !call.Modern {
		r.legacy = &legacyAsker{peer: call.Peer, canElicit: call.CanElicit}
	}
	if len(call.Responses) > 0 {
		r.early = call.Responses
	}
	if resume != nil {
		for _, a := range resume.Asked {
			r.start = append(r.start, components.StartPoint{NodeID: a.NodeID, Msg: a.Msg.Message()})
		}
	}
	r.ctx, r.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	// The chain asks through this run, never through an Asker or Approver
	// the caller's context carries (an agent calling over "self"); its
	// approvals and forms become questions to the client too.
	runCtx := ask.WithAsker(r.ctx, r)
	if !r.interruptible {
		runCtx = tools.WithApprover(runCtx, mcpApprover{asker: r})
	}
	if e, ok := c.store.Engine(id); ok {
		runCtx = components.WithNodeSteps(runCtx, e, id, r.progress)
	}
	// Attached before the run starts, so that its first events are sent.
	r.progress.attach(call.Peer, call.Progress)
	go func() {
		var res RunResult
		var err error
		if r.resumed != nil {
			res, err = c.store.GoOn(runCtx, r.resumed, r.progress)
		} else {
			res, err = c.store.Run(runCtx, RunRequest{ChainID: id, Input: input, Metadata: md, Source: md["source"], Sink: r.progress,
				Owner: owner, StartAt: r.start, Interruptible: r.interruptible, Traceparent: traceparent, Tracestate: tracestate})
		}
		if err != nil && r.ctx.Err() != nil {
			err = context.Cause(r.ctx)
		}
		r.res, r.err = Result{Msg: res.Msg, Relation: res.Relation, Usage: res.Usage, Cost: res.Cost, Currency: res.Currency}, err
		if r.ctx.Err() == nil {
			r.asked, r.traceparent, r.tracestate = res.Asked, res.Traceparent, res.Tracestate
			if res.Outcome == OutcomeInterrupt && len(res.Interrupts) > 0 {
				r.interrupts, r.storeRun = res.Interrupts, res.RunID
			}
		}
		close(r.done)
		r.cancel(nil)
		c.waiting.forget(r)
	}()
	return r, nil
}

// Ask implements ask.Asker for the nodes of the run.
func (r *chainRun) Ask(ctx context.Context, q ask.Question) (ask.Answer, error) {
	if err := ask.Check(q); err != nil {
		return ask.Answer{}, err
	}
	if r.legacy != nil {
		return r.legacy.ask(ctx, q)
	}
	r.mu.Lock()
	if raw, ok := r.early[q.Key()]; ok {
		delete(r.early, q.Key())
		if a, err := decodeAnswer(raw, q); err == nil {
			r.mu.Unlock()
			return a, nil
		}
		// A malformed early answer is no answer: the question is asked.
	}
	if r.pausing && !askedWithinCall(ctx) {
		// A chain node asks: the run pauses (its node ends its branch),
		// and is saved as a checkpoint once it has ended.
		r.mu.Unlock()
		q.ID = q.Key()
		return ask.Answer{}, &ask.PendingError{Question: q}
	}
	oq := &openQuestion{key: r.freeKey(q.Key()), q: q, answer: make(chan ask.Answer, 1)}
	r.open = append(r.open, oq)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	select {
	case a := <-oq.answer:
		return a, nil
	case <-ctx.Done():
		r.mu.Lock()
		r.drop(oq)
		r.mu.Unlock()
		return ask.Answer{}, context.Cause(ctx)
	}
}

// freeKey is key, or key_2, key_3... when a question still open has it.
// The caller holds r.mu.
func (r *chainRun) freeKey(key string) string {
	taken := func(k string) bool {
		for _, oq := range r.open {
			if oq.key == k {
				return true
			}
		}
		return false
	}
	if !taken(key) {
		return key
	}
	for n := 2; ; n++ {
		if k := key + "_" + strconv.Itoa(n); !taken(k) {
			return k
		}
	}
}

// drop removes an open question. The caller holds r.mu.
func (r *chainRun) drop(oq *openQuestion) {
	for i, o := range r.open {
		if o == oq {
			r.open = append(r.open[:i], r.open[i+1:]...)
			return
		}
	}
}

// questions are the open questions, keyed as the client must answer them.
func (r *chainRun) questions() []ask.Question {
	r.mu.Lock()
	defer r.mu.Unlock()
	qs := make([]ask.Question, len(r.open))
	for i, oq := range r.open {
		qs[i] = oq.q
		qs[i].ID = oq.key
	}
	return qs
}

// answer hands the client's answers to the open questions they name. It
// checks every answer first, so a malformed one delivers none; keys that
// name no open question are ignored.
func (r *chainRun) answer(responses map[string]json.RawMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	type delivery struct {
		oq *openQuestion
		a  ask.Answer
	}
	var ds []delivery
	for _, oq := range r.open {
		raw, ok := responses[oq.key]
		if !ok {
			continue
		}
		a, err := decodeAnswer(raw, oq.q)
		if err != nil {
			return fmt.Errorf("inputResponses[%q]: %w", oq.key, err)
		}
		ds = append(ds, delivery{oq, a})
	}
	for _, d := range ds {
		d.oq.answer <- d.a
		r.drop(d.oq)
	}
	return nil
}

// ask asks a 2025-11-25 client's user, or says why it cannot.
func (l *legacyAsker) ask(ctx context.Context, q ask.Question) (ask.Answer, error) {
	if !l.canElicit {
		return ask.Answer{}, &ask.NotAskedError{Question: q, Why: "the MCP client did not declare the elicitation capability"}
	}
	return l.peer.elicit(ctx, q)
}

// decodeAnswer reads an elicitation result ({action, content}) as the
// answer to q: the action must be one MCP defines, and accepted content
// must be an object matching q's schema.
func decodeAnswer(raw json.RawMessage, q ask.Question) (ask.Answer, error) {
	var res struct {
		Action  ask.Action      `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return ask.Answer{}, errors.New(`not an elicitation result ({"action": "accept"|"decline"|"cancel", "content": {...}})`)
	}
	switch res.Action {
	case ask.Accept:
	case ask.Decline, ask.Cancel:
		return ask.Answer{Action: res.Action}, nil
	default:
		return ask.Answer{}, fmt.Errorf(`action %q is not "accept", "decline" or "cancel"`, res.Action)
	}
	if len(q.Schema) == 0 {
		return ask.Answer{Action: ask.Accept, Content: res.Content}, nil
	}
	if len(res.Content) == 0 || res.Content[0] != '{' {
		return ask.Answer{}, errors.New("an accepted answer needs its content, an object")
	}
	schema, err := tools.CompileSchema(q.Schema)
	if err != nil {
		return ask.Answer{}, fmt.Errorf("the question's schema: %w", err)
	}
	if err := schema.Validate(res.Content); err != nil {
		return ask.Answer{}, fmt.Errorf("the content does not match the requested schema: %w", err)
	}
	return ask.Answer{Action: ask.Accept, Content: res.Content}, nil
}
