package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/tools"
)

// run is the state of one run.
type run struct {
	agent  *Agent
	in     *Input
	stream *events.Stream
	point  *aspects.Point
	tools  *tools.Run

	mu    sync.Mutex // guards model (parallel sub-steps never race, but aspects may read)
	model string

	// caller is the application's part of the run (front-end tools,
	// context), nil when there is none; pending are the calls of its tools
	// the run ended on.
	caller  *Caller
	pending []events.ToolCall
	// ledger adds up the run's usage, sub-agents included.
	ledger *Ledger

	// callIDs counts the tool-call ids used in the run: some servers reuse
	// ids such as "call_0" every turn, which would make two calls of one
	// run indistinguishable to clients and to the model.
	callIDs map[string]int

	// sessionKey keys the per-session limits (not a conversation session:
	// see sessionKeyOf); sessionAdded is what the run has added to the
	// session's token count so far.
	sessionKey   string
	sessionAdded int64
	// toolsJSON is the tools array offered last, built from ownJSON (see
	// offered).
	toolsJSON, ownJSON []byte
	// started is when the run started (a resumed run's, before its pause).
	started time.Time
	// tap names the run to the context's Tap (nil: none).
	tap *tapScope
}

// uniqueCallID returns id, or id with a suffix if the run already used it.
func (r *run) uniqueCallID(id string) string {
	if r.callIDs == nil {
		r.callIDs = map[string]int{}
	}
	n := r.callIDs[id]
	r.callIDs[id] = n + 1
	if n == 0 {
		return id
	}
	unique := id + "_" + strconv.Itoa(n+1)
	for r.callIDs[unique] > 0 {
		n++
		unique = id + "_" + strconv.Itoa(n+1)
	}
	r.callIDs[unique] = 1
	return unique
}

// finalTurnPrompt is appended to the conversation of the forced last turn.
const finalTurnPrompt = "You have used all the steps available for this task. Do not call any more tools. " +
	"Answer now with what you have found so far, and say what remains undone, if anything."

// loop is the ReAct loop: it is the core the Around aspects wrap.
func (r *run) loop(ctx context.Context, input *aspects.RunInput) (*aspects.RunOutput, error) {
	r.newTools()
	// Room for the system prompt and one answer: a run held by a slow
	// stream should not hold empty messages (176 bytes each); tool turns
	// grow it.
	conv := make([]events.Message, 0, len(input.Messages)+2)
	if sp := r.systemPrompt(ctx, input.SystemPrompt); sp != "" {
		conv = append(conv, events.Message{Role: events.RoleSystem, Content: sp})
	}
	conv = append(conv, input.Messages...)
	return r.steps(ctx, &loopState{conv: conv, firstNew: len(conv)}, 1)
}

// newTools makes the state every tool call of the run shares.
func (r *run) newTools() {
	cfg := &r.agent.cfg
	r.tools = &tools.Run{Sink: r.stream, Aspects: cfg.Aspects, Point: *r.point, Scrubber: r.in.Scrubber,
		MaxOutput: cfg.MaxToolOutputLength, MaxCalls: cfg.MaxToolCalls, RepeatLimit: max(cfg.RepeatLimit, 0), Meta: r.in.Bind,
		MaxSubagents: cfg.MaxConcurrentSubagents, Approval: cfg.Approval, Policy: r.in.Policy, Audit: cfg.Audit,
		ParentRunID: r.in.ParentRunID, SessionKey: r.sessionKey}
	r.tools.SessionCalls = r.sessionCalls()
}

// loopState is the conversation a loop runs on, where the messages the run
// adds begin, and what it has produced so far.
type loopState struct {
	conv     []events.Message
	firstNew int
	out      aspects.RunOutput
}

// steps runs the loop's turns from step from on, until an answer.
func (r *run) steps(ctx context.Context, ls *loopState, from int) (*aspects.RunOutput, error) {
	cfg := &r.agent.cfg
	out := &ls.out
	for step := from; ; step++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := r.checkBudget(ctx); err != nil {
			return nil, err
		}
		final := step > cfg.MaxStep
		r.point.Step = step
		turn, err := r.turn(ctx, step, ls.conv, r.offered(), final)
		if err != nil {
			return nil, err
		}
		out.Steps = step
		msg := events.Message{ID: turn.messageID, Role: events.RoleAssistant, Content: turn.Content, Reasoning: turn.Reasoning}
		if !final {
			msg.ToolCalls = turn.ToolCalls
		}
		ls.conv = append(ls.conv, msg)
		if final || len(turn.ToolCalls) == 0 {
			out.Content, out.Reasoning = turn.Content, turn.Reasoning
			out.Truncated = final
			if final && strings.TrimSpace(out.Content) == "" {
				out.Content = fmt.Sprintf("I stopped after %d step%s without reaching a final answer.", cfg.MaxStep, plural(cfg.MaxStep))
			}
			break
		}
		own, theirs := r.splitCalls(turn)
		done, err := r.toolTurn(ctx, ls, step, turn, theirs, r.newCalls(own))
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	return r.output(ls), nil
}

// toolTurn runs the agent's own calls of a turn (calls: those not done
// yet, when a suspended turn goes on) and adds their results to the
// conversation. A call that waits for an answer suspends the run. The run
// is done when the turn leaves calls of the caller's tools (theirs) for
// the caller to answer.
func (r *run) toolTurn(ctx context.Context, ls *loopState, step int, turn *turnResult, theirs []events.ToolCall, calls []CallState) (bool, error) {
	r.callTools(ctx, turn.messageID, calls)
	for i := range calls {
		if calls[i].Result == nil {
			return false, r.suspend(ls, step, turn, theirs, calls)
		}
	}
	for i := range calls {
		ls.conv = append(ls.conv, *calls[i].Result)
	}
	ls.out.ToolCalls += len(calls)
	if len(theirs) > 0 {
		// The caller runs these: the run ends here, and the caller's
		// next request carries their results.
		r.leavePending(turn, theirs)
		ls.out.Content, ls.out.Reasoning = turn.Content, turn.Reasoning
		return true, nil
	}
	return false, nil
}

// output is what the loop produced.
func (r *run) output(ls *loopState) *aspects.RunOutput {
	out := &ls.out
	out.Messages = ls.conv[ls.firstNew:]
	out.Usage = r.ledger.Total()
	r.mu.Lock()
	out.Model = r.model
	r.mu.Unlock()
	if out.Model == "" {
		out.Model = r.point.Model
	}
	return out
}

// systemPrompt joins the agent's prompt, what its tools add (skills) and
// the context the caller gave.
func (r *run) systemPrompt(ctx context.Context, own string) string {
	parts := make([]string, 0, 3)
	for _, p := range []string{own, r.agent.cfg.Tools.SystemPromptFor(ctx, r.tools), r.caller.contextPrompt()} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "\n\n")
}

// turnResult is one LLM turn with the id of its assistant message.
type turnResult struct {
	*Turn
	messageID string
	// streamed are the ids of the calls announced while streaming.
	streamed []string
	// withdrawn are the tools a BeforeLLM aspect took out of this turn's
	// offer: calls of them are refused.
	withdrawn []string
}

// turn runs one LLM turn: BeforeLLM aspects, the call (streamed into
// events), AfterLLM aspects.
func (r *run) turn(ctx context.Context, step int, conv []events.Message, toolsJSON []byte, final bool) (*turnResult, error) {
	cfg := &r.agent.cfg
	stepName := "turn " + strconv.Itoa(step)
	r.stream.Emit(events.Event{Type: events.StepStarted, StepName: stepName, Meta: events.Meta{Step: step}})

	msgs := conv
	if final {
		msgs = append(conv[:len(conv):len(conv)], events.Message{Role: events.RoleUser, Content: finalTurnPrompt})
	}
	ctx, llm, err := r.tapTurn(ctx, step, msgs)
	if err != nil {
		return nil, err
	}
	req := &aspects.LLMRequest{Messages: msgs}
	var offered, withdrawn []string
	if !final && cfg.Aspects.HasBeforeLLM() {
		offered = r.offeredNames()
		req.ToolNames = slices.Clone(offered)
	}
	if err := cfg.Aspects.BeforeLLM(ctx, r.point, req); err != nil {
		return nil, err
	}
	if !final && !slices.Equal(req.ToolNames, offered) {
		toolsJSON, withdrawn = narrowTools(toolsJSON, offered, req.ToolNames)
	}
	creq := &Request{Messages: req.Messages, Tools: toolsJSON, NoTools: final}
	if !final && cfg.Tools.Len() > 1 && len(toolsJSON) > 2 {
		p := cfg.ParallelToolCalls
		creq.ParallelToolCalls = &p
	}
	em := &emitter{r: r, messageID: r.in.RunID + "-msg-" + strconv.Itoa(step), ctx: ctx, toolMeta: r.toolMeta}
	start := time.Now()
	t, err := llm.Complete(ctx, creq, r.in.Stream, em, r.retrying)
	if err != nil {
		em.close()
		var le *LLMError
		if ctx.Err() == nil && errors.As(err, &le) {
			metrics.LLMRequests.WithLabelValues(r.point.Model, "error").Inc()
		}
		return nil, err
	}
	if final {
		t.ToolCalls = nil
	}
	for i := range t.ToolCalls {
		// A streamed call keeps the id it was announced under (made unique
		// by the emitter), found by its key: never by its place in the
		// order the calls were announced, which the provider decides.
		if id := em.idOf(t.Key(i)); r.in.Stream && id != "" {
			t.ToolCalls[i].ID = id
		} else {
			t.ToolCalls[i].ID = r.uniqueCallID(t.ToolCalls[i].ID)
		}
	}
	if !r.in.Stream {
		// Not streamed: the chunk point sees the whole answer, before the
		// after-LLM point and before anything of it is emitted.
		if err := em.filterTurn(t); err != nil {
			return nil, err
		}
	}
	resp := &aspects.LLMResponse{Content: t.Content, Reasoning: t.Reasoning, ToolCalls: t.ToolCalls,
		FinishReason: t.FinishReason, Model: t.Model, Usage: t.Usage}
	if err := cfg.Aspects.AfterLLM(ctx, r.point, resp); err != nil {
		em.close()
		return nil, err
	}
	t.Content, t.Reasoning, t.ToolCalls, t.FinishReason = resp.Content, resp.Reasoning, resp.ToolCalls, resp.FinishReason
	t.Model, t.Usage = resp.Model, resp.Usage
	if !r.in.Stream {
		em.replay(t)
	}
	em.close()

	r.mu.Lock()
	if t.Model != "" {
		r.model = t.Model
	}
	model := r.model
	r.mu.Unlock()
	if model == "" {
		model = r.point.Model
	}
	cost, currency := r.recordLLM(t, model, step, start)
	r.stream.Emit(events.Event{Type: events.StepFinished, StepName: stepName, Meta: events.Meta{Step: step, Model: t.Model,
		InputTokens: t.Usage.PromptTokens, OutputTokens: t.Usage.CompletionTokens, Cost: cost, Currency: currency}})
	return &turnResult{Turn: t, messageID: em.messageID, streamed: em.calls, withdrawn: withdrawn}, nil
}

// narrowTools keeps of a turn's tools array those a BeforeLLM aspect left
// in its ToolNames, and names the tools it withdrew. A name that was not
// offered is ignored: an aspect narrows the offer, it cannot grant a tool.
func narrowTools(toolsJSON []byte, offered, kept []string) ([]byte, []string) {
	var withdrawn []string
	for _, n := range offered {
		if !slices.Contains(kept, n) {
			withdrawn = append(withdrawn, n)
		}
	}
	if len(withdrawn) == 0 {
		return toolsJSON, nil
	}
	out := []byte{'['}
	gjson.ParseBytes(toolsJSON).ForEach(func(_, t gjson.Result) bool {
		if slices.Contains(kept, t.Get("function.name").Str) {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, t.Raw...)
		}
		return true
	})
	return append(out, ']'), withdrawn
}

// retrying reports LLM retries and failovers as CUSTOM events, so a client
// sees why an answer is slow.
func (r *run) retrying(rt Retry) {
	name := "ruleagent.llm_retry"
	if rt.Failover {
		name = "ruleagent.llm_failover"
	}
	v, _ := jsonObject("url", rt.URL, "model", rt.Model, "attempt", rt.Attempt, "status", rt.Status,
		"delayMs", rt.Delay.Milliseconds(), "error", r.scrub(rt.Err.Error()))
	r.stream.Emit(events.Event{Type: events.Custom, Name: name, Value: v})
}

// toolMeta returns the event metadata of a call of a tool by name: the
// tool's type and target, and the agent node that calls it (chainId,
// nodeId), which tells apart agents of one chain that share a tool name.
func (r *run) toolMeta(name string) events.Meta {
	m := events.Meta{ChainID: r.point.ChainID, NodeID: r.point.NodeID}
	if e := r.agent.cfg.Tools.Lookup(name); e != nil {
		m.ToolType, m.TargetID = e.Type, e.TargetID
	} else if r.caller.has(name) {
		m.ToolType = ToolTypeClient
	}
	return m
}

// ToolTypeClient is the event toolType of a call of a caller's tool.
const ToolTypeClient = "client"

// splitCalls separates the turn's calls the agent runs from those of the
// caller's tools (the agent's own tools win a name clash).
func (r *run) splitCalls(t *turnResult) (own *turnResult, theirs []events.ToolCall) {
	if r.caller == nil || len(r.caller.Tools) == 0 {
		return t, nil
	}
	mine := *t
	mine.Turn = &Turn{}
	*mine.Turn = *t.Turn
	mine.ToolCalls = nil
	for _, tc := range t.ToolCalls {
		// A caller's tool an aspect withdrew from the turn is refused by
		// the wrapper, as the agent's own are.
		if r.agent.cfg.Tools.Lookup(tc.Name) == nil && r.caller.has(tc.Name) && !slices.Contains(t.withdrawn, tc.Name) {
			theirs = append(theirs, tc)
		} else {
			mine.ToolCalls = append(mine.ToolCalls, tc)
		}
	}
	return &mine, theirs
}

// leavePending records the caller's calls the run ends on, announcing
// those the LLM stream did not already announce.
func (r *run) leavePending(t *turnResult, calls []events.ToolCall) {
	for _, tc := range calls {
		if !slices.Contains(t.streamed, tc.ID) {
			r.stream.Emit(events.Event{Type: events.ToolCallStart, ToolCallID: tc.ID, ToolCallName: tc.Name,
				ParentMessageID: t.messageID, Meta: events.Meta{ToolType: ToolTypeClient, ChainID: r.point.ChainID, NodeID: r.point.NodeID}})
			r.stream.Emit(events.Event{Type: events.ToolCallArgs, ToolCallID: tc.ID, Delta: tc.Arguments})
			r.stream.Emit(events.Event{Type: events.ToolCallEnd, ToolCallID: tc.ID})
		}
	}
	r.pending = append(r.pending, calls...)
	r.caller.addPending(calls)
}

// plural is the "s" a count other than one takes.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
