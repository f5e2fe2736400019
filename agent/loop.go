package agent

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
)

// run is the state of one run.
type run struct {
	agent  *Agent
	in     *Input
	stream *events.Stream
	point  *aspects.Point
	tools  *tools.Run

	mu    sync.Mutex // guards usage and model (parallel sub-steps never race, but aspects may read)
	usage aspects.Usage
	model string

	// callIDs counts the tool-call ids used in the run: some servers reuse
	// ids such as "call_0" every turn, which would make two calls of one
	// run indistinguishable to clients and to the model.
	callIDs map[string]int
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
	cfg := &r.agent.cfg
	r.tools = &tools.Run{Sink: r.stream, Aspects: cfg.Aspects, Point: *r.point, Scrubber: r.in.Scrubber,
		MaxOutput: cfg.MaxToolOutputLength, MaxCalls: cfg.MaxToolCalls, RepeatLimit: max(cfg.RepeatLimit, 0), Meta: r.in.Bind,
		MaxSubagents: cfg.MaxConcurrentSubagents}

	conv := make([]events.Message, 0, len(input.Messages)+8)
	if sp := r.systemPrompt(ctx, input.SystemPrompt); sp != "" {
		conv = append(conv, events.Message{Role: events.RoleSystem, Content: sp})
	}
	conv = append(conv, input.Messages...)
	firstNew := len(conv)

	out := &aspects.RunOutput{}
	toolsJSON := cfg.Tools.ToolsJSON()
	for step := 1; ; step++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		final := step > cfg.MaxStep
		r.point.Step = step
		turn, err := r.turn(ctx, step, conv, toolsJSON, final)
		if err != nil {
			return nil, err
		}
		out.Steps = step
		msg := events.Message{ID: turn.messageID, Role: events.RoleAssistant, Content: turn.Content, Reasoning: turn.Reasoning}
		if !final {
			msg.ToolCalls = turn.ToolCalls
		}
		conv = append(conv, msg)
		if final || len(turn.ToolCalls) == 0 {
			out.Content, out.Reasoning = turn.Content, turn.Reasoning
			out.Truncated = final
			if final && strings.TrimSpace(out.Content) == "" {
				out.Content = fmt.Sprintf("I stopped after %d step%s without reaching a final answer.", cfg.MaxStep, plural(cfg.MaxStep))
			}
			break
		}
		results := r.callTools(ctx, turn)
		for i, tc := range turn.ToolCalls {
			m := events.Message{Role: events.RoleTool, ToolCallID: tc.ID, Content: results[i].Content}
			if results[i].IsError {
				m.Error = results[i].Kind
				if m.Error == "" {
					m.Error = "error"
				}
			}
			conv = append(conv, m)
		}
		out.ToolCalls += len(turn.ToolCalls)
	}
	out.Messages = conv[firstNew:]
	r.mu.Lock()
	out.Usage, out.Model = r.usage, r.model
	r.mu.Unlock()
	if out.Model == "" {
		out.Model = r.point.Model
	}
	return out, nil
}

// systemPrompt joins the agent's prompt and what its tools add (skills).
func (r *run) systemPrompt(ctx context.Context, own string) string {
	extra := r.agent.cfg.Tools.SystemPrompt(ctx)
	switch {
	case extra == "":
		return own
	case own == "":
		return extra
	}
	return own + "\n\n" + extra
}

// turnResult is one LLM turn with the id of its assistant message.
type turnResult struct {
	*Turn
	messageID string
	// streamed are the ids of the calls announced while streaming.
	streamed []string
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
	req := &aspects.LLMRequest{Messages: msgs}
	if !final {
		req.ToolNames = cfg.Tools.Names()
	}
	if err := cfg.Aspects.BeforeLLM(ctx, r.point, req); err != nil {
		return nil, err
	}
	creq := &Request{Messages: req.Messages, Tools: toolsJSON, NoTools: final}
	if !final && cfg.Tools.Len() > 1 {
		p := cfg.ParallelToolCalls
		creq.ParallelToolCalls = &p
	}
	em := &emitter{r: r, messageID: r.in.RunID + "-msg-" + strconv.Itoa(step), ctx: ctx, toolMeta: r.toolMeta}
	t, err := cfg.LLM.Complete(ctx, creq, r.in.Stream, em, r.retrying)
	if err != nil {
		em.close()
		return nil, err
	}
	if final {
		t.ToolCalls = nil
	}
	if r.in.Stream && len(em.calls) == len(t.ToolCalls) {
		// The ids the calls were streamed under, made unique by the emitter.
		for i := range t.ToolCalls {
			t.ToolCalls[i].ID = em.calls[i]
		}
	} else {
		for i := range t.ToolCalls {
			t.ToolCalls[i].ID = r.uniqueCallID(t.ToolCalls[i].ID)
		}
	}
	resp := &aspects.LLMResponse{Content: t.Content, Reasoning: t.Reasoning, ToolCalls: t.ToolCalls,
		FinishReason: t.FinishReason, Model: t.Model, Usage: t.Usage}
	if err := cfg.Aspects.AfterLLM(ctx, r.point, resp); err != nil {
		em.close()
		return nil, err
	}
	t.Content, t.Reasoning, t.ToolCalls, t.FinishReason = resp.Content, resp.Reasoning, resp.ToolCalls, resp.FinishReason
	if !r.in.Stream {
		em.replay(t)
	}
	em.close()

	r.mu.Lock()
	r.usage.Add(t.Usage)
	if t.Model != "" {
		r.model = t.Model
	}
	r.mu.Unlock()
	r.stream.Emit(events.Event{Type: events.StepFinished, StepName: stepName, Meta: events.Meta{Step: step, Model: t.Model}})
	return &turnResult{Turn: t, messageID: em.messageID, streamed: em.calls}, nil
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

// toolMeta returns the event metadata of a tool by name.
func (r *run) toolMeta(name string) events.Meta {
	if e := r.agent.cfg.Tools.Lookup(name); e != nil {
		return events.Meta{ToolType: e.Type, TargetID: e.TargetID}
	}
	return events.Meta{}
}

// plural is the "s" a count other than one takes.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
