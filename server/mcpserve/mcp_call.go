package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// errNoMessage refuses an agent call without a question.
var errNoMessage = errors.New(`the agent needs "message": what to ask it (or "messages": an OpenAI conversation)`)

// call runs chain id's tool. A chain failure is a result with isError, so
// the client (often a model) can read it. A question the chain asks (see
// package ask) reaches the client as its protocol era allows: see
// chainRun. Only a requestState or answers that cannot be used, and a
// question to a client that cannot show it, are protocol errors.
func (c *chainTools) call(ctx context.Context, id string, call ToolCall) ToolOutcome {
	c.mu.Lock()
	exposed, ok := c.byChain[id]
	c.mu.Unlock()
	if !ok {
		return errorOutcome(fmt.Sprintf("chain %q is no longer deployed", id))
	}
	var run *chainRun
	paused := strings.HasPrefix(call.State, inputStatePrefix) || strings.HasPrefix(call.State, interruptStatePrefix)
	if paused && call.Modern && c.store.Draining() {
		// Not claimed: another replica goes on with the run.
		return errorOutcome(runs.ErrDraining.Error())
	}
	if strings.HasPrefix(call.State, inputStatePrefix) && call.Modern {
		// The run paused as a checkpoint (mcp_input_pause.go): this
		// replica claims it and goes on with it.
		pause, answers, err := c.claimPause(ctx, call.State, id, identity.From(ctx), call.Responses)
		if err != nil {
			return ToolOutcome{Err: &ProtocolError{Code: CodeInvalidParams, Message: err.Error()}}
		}
		asTask := call.Tasks && taskSupport(exposed.info) != taskForbidden
		resumed := call
		resumed.Responses = answers
		if asTask {
			// As below: the retry that answers mcpTaskAfterInput's
			// questions becomes the task.
			if why := c.tasks.full(); why != "" {
				return errorOutcome(why)
			}
			resumed.Progress = nil
		}
		if run, err = c.startRun(ctx, id, "", resumed, true, runResume{pause: pause}); err != nil {
			return errorOutcome(err.Error())
		}
		if asTask {
			return c.tasks.start(ctx, exposed.name, run, call)
		}
		return c.await(ctx, run, call)
	}
	if strings.HasPrefix(call.State, interruptStatePrefix) && call.Modern {
		// An agent's approvals or forms paused the run
		// (mcp_interrupt_pause.go): this replica claims it and goes on.
		r, err := c.claimInterrupts(ctx, call.State, id, identity.From(ctx), call.Responses)
		if err != nil {
			return ToolOutcome{Err: &ProtocolError{Code: CodeInvalidParams, Message: err.Error()}}
		}
		asTask := call.Tasks && taskSupport(exposed.info) != taskForbidden
		resumed := call
		resumed.Responses = nil
		if asTask {
			// As below: the retry that answers becomes the task.
			if why := c.tasks.full(); why != "" {
				c.dropInterrupted(ctx, r.RunID())
				return errorOutcome(why)
			}
			resumed.Progress = nil
		}
		if run, err = c.startRun(ctx, id, "", resumed, true, runResume{interrupted: r}); err != nil {
			return errorOutcome(err.Error())
		}
		if asTask {
			return c.tasks.start(ctx, exposed.name, run, call)
		}
		return c.await(ctx, run, call)
	}
	if call.State != "" {
		if !call.Modern {
			return ToolOutcome{Err: &ProtocolError{Code: CodeInvalidParams, Message: "requestState is only used from protocol version 2026-07-28 on"}}
		}
		r, err := c.waiting.resume(call.State, id, identity.From(ctx))
		if err != nil {
			return ToolOutcome{Err: &ProtocolError{Code: CodeInvalidParams, Message: err.Error()}}
		}
		// Attached before the answers go in, so that what they set off is
		// reported to this request.
		r.progress.attach(call.Peer, call.Progress)
		if err := r.answer(call.Responses); err != nil {
			// The run stays as it was: the same state may be retried.
			r.progress.detach(true)
			c.waiting.release(r)
			return ToolOutcome{Err: &ProtocolError{Code: CodeInvalidParams, Message: err.Error()}}
		}
		run = r
		if call.Tasks && taskSupport(exposed.info) != taskForbidden {
			// The client answered the questions asked before the task
			// began (additionalInfo.mcpTaskAfterInput), and can take a
			// task: the run goes on as one.
			r.progress.detach(true)
			c.waiting.forget(r)
			if why := c.tasks.full(); why != "" {
				r.cancel(errors.New(why))
				return errorOutcome(why)
			}
			return c.tasks.start(ctx, exposed.name, r, call)
		}
	} else {
		if err := checkResponses(call.Responses); err != nil {
			return ToolOutcome{Err: &ProtocolError{Code: CodeInvalidParams, Message: err.Error()}}
		}
		support := taskSupport(exposed.info)
		if support == taskRequired && !call.Tasks {
			return ToolOutcome{Err: &ProtocolError{Code: CodeMissingCapability,
				Message: "this tool runs only as a task: declare the " + TasksExtension + " extension in the request's clientCapabilities",
				Data:    map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}}}}
		}
		input, err := chainInput(exposed.info, call.Args)
		if err != nil {
			return errorOutcome(err.Error())
		}
		// A chain that asks first (mcpTaskAfterInput) runs as a plain call
		// until its questions are answered: the retry that answers them
		// becomes the task (above); one that never asks answers at once.
		asTask := call.Tasks && call.Modern && support != taskForbidden && !exposed.info.MCPTaskAfterInput
		if asTask {
			if why := c.tasks.full(); why != "" {
				return errorOutcome(why)
			}
			// The task's progress is its status, polled: nothing is sent
			// on the call's stream, which ends with the CreateTaskResult.
			call.Progress = nil
		}
		if run, err = c.startRun(ctx, id, input, call, true, runResume{}); err != nil {
			return errorOutcome(err.Error())
		}
		if asTask {
			return c.tasks.start(ctx, exposed.name, run, call)
		}
	}
	return c.await(ctx, run, call)
}

// await waits on a run, whose progress is attached to the request ctx:
// until it ends, until it asks a 2026-07-28 client for input (the run then
// waits for the retry), or until the request is cancelled (and with it the
// run).
//
// The progress is detached before the outcome is returned, its queued
// notifications written: none follows the result. A cancelled request is
// sent nothing more: its queued progress is dropped, and the transports
// drop the result mcp-go still writes for it (see mcpEndpoint and
// ServeStdio).
func (c *chainTools) await(ctx context.Context, run *chainRun, call ToolCall) ToolOutcome {
	stop := context.AfterFunc(ctx, func() { run.cancel(context.Cause(ctx)) })
	defer stop()
	for {
		if qs := run.questions(); len(qs) > 0 {
			run.progress.detach(true)
			return c.askClient(run, call, qs)
		}
		select {
		case <-run.done:
			run.progress.detach(true)
			if len(run.interrupts) > 0 {
				return c.interruptClient(ctx, run, call)
			}
			if len(run.asked) > 0 {
				return c.pauseClient(ctx, run, call)
			}
			return c.outcome(run)
		case <-run.wake:
		case <-ctx.Done():
			run.progress.detach(false)
			// Store.Run stops the run within components.CancelGrace.
			<-run.done
			return c.outcome(run)
		}
	}
}

// askClient answers a 2026-07-28 client with the run's open questions, or
// with the error of a client that cannot be asked.
func (c *chainTools) askClient(run *chainRun, call ToolCall, qs []ask.Question) ToolOutcome {
	if !call.CanElicit {
		perr := missingElicitation(qs)
		run.cancel(perr)
		return ToolOutcome{Err: perr}
	}
	state, err := c.waiting.hold(run)
	if err != nil {
		run.cancel(err)
		<-run.done
		return c.outcome(run)
	}
	return ToolOutcome{Questions: qs, State: state}
}

// pauseClient answers a 2026-07-28 client with the questions of a run that
// paused on them, saved as a checkpoint; or with the error of a client
// that cannot be asked.
func (c *chainTools) pauseClient(ctx context.Context, run *chainRun, call ToolCall) ToolOutcome {
	if !call.CanElicit {
		qs, _ := askedQuestions(run.asked)
		return ToolOutcome{Err: missingElicitation(qs)}
	}
	qs, state, err := c.pauseRun(ctx, run)
	if err != nil {
		return errorOutcome(c.secrets(run.chain).Scrub(err.Error()))
	}
	return ToolOutcome{Questions: qs, State: state}
}

// interruptClient answers a 2026-07-28 client with the questions of a run
// paused on its interrupts; or with the error of a client that cannot be
// asked (the paused run is then dropped).
func (c *chainTools) interruptClient(ctx context.Context, run *chainRun, call ToolCall) ToolOutcome {
	qs := make([]ask.Question, len(run.interrupts))
	for i, in := range run.interrupts {
		qs[i] = interruptQuestion(in)
	}
	if !call.CanElicit {
		c.dropInterrupted(ctx, run.storeRun)
		return ToolOutcome{Err: missingElicitation(qs)}
	}
	return ToolOutcome{Questions: qs, State: interruptState(run.storeRun, run.interrupts)}
}

// outcome is the result of a run that ended: its answer, or its failure
// (scrubbed of the chain's secrets).
func (c *chainTools) outcome(run *chainRun) ToolOutcome {
	if run.err != nil {
		msg := c.secrets(run.chain).Scrub(run.err.Error())
		out := errorOutcome(msg)
		if code := metadataOf(run.res.Msg)["errorCode"]; code != "" {
			out.Meta = map[string]any{"errorCode": code}
		}
		return withUsage(out, run.res)
	}
	return answerOutcome(run.res)
}

// checkResponses refuses answers that are not answers: every value of
// inputResponses must be an object (an elicitation result).
func checkResponses(responses map[string]json.RawMessage) error {
	for k, raw := range responses {
		if t := strings.TrimSpace(string(raw)); !strings.HasPrefix(t, "{") {
			return fmt.Errorf("inputResponses[%q] is not a result object", k)
		}
	}
	return nil
}

// chainInput turns a call's arguments into the chain's input message data.
// An agent with the default schema takes "message" (or OpenAI "messages");
// any other chain gets the arguments object as they came, so that large
// integers keep their digits.
func chainInput(info ChainInfo, args json.RawMessage) (string, error) {
	raw := []byte(strings.TrimSpace(string(args)))
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return "", fmt.Errorf("the arguments must be a JSON object, not %s", raw)
	}
	if !info.IsAgent || len(info.InputSchema) > 0 {
		return string(raw), nil
	}
	var in struct {
		Message  string          `json:"message"`
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return "", fmt.Errorf("the arguments are not an object: %w", err)
	}
	if len(in.Messages) > 0 && string(in.Messages) != "null" {
		return `{"messages":` + string(in.Messages) + `}`, nil
	}
	if strings.TrimSpace(in.Message) == "" {
		return "", errNoMessage
	}
	b, err := json.Marshal(map[string]string{"message": in.Message})
	return string(b), err
}

// answerOutcome is a chain's answer: its final message data as text, and in
// _meta the run's id, model and token usage when the chain reports them.
func answerOutcome(res Result) ToolOutcome {
	out := textOutcome(res.Msg.GetData())
	md := metadataOf(res.Msg)
	meta := map[string]any{}
	for _, k := range []string{"runId", "threadId", "model"} {
		if v := md[k]; v != "" {
			meta[k] = v
		}
	}
	usage := map[string]any{}
	for _, k := range []string{"promptTokens", "completionTokens", "totalTokens"} {
		if n, err := strconv.ParseInt(md[k], 10, 64); err == nil {
			usage[k] = n
		}
	}
	if len(usage) > 0 {
		meta["usage"] = usage
	}
	if len(meta) > 0 {
		out.Meta = meta
	}
	return withUsage(out, res)
}

// UsageMetaKey is the _meta key of a result's run usage and cost: a
// prefixed name (reverse DNS of ruleagent.github.io), as MCP asks of
// implementation-specific keys.
const UsageMetaKey = "io.github.ruleagent/usage"

// runUsage is the value under UsageMetaKey: the usage and cost of the run
// as its terminal event (RUN_FINISHED, RUN_ERROR) carries them.
type runUsage struct {
	Usage    []events.TokenUsage `json:"usage"`
	Cost     string              `json:"cost,omitempty"`
	Currency string              `json:"currency,omitempty"`
}

// withUsage adds the run's usage (and cost, when a price table applied)
// to the outcome's _meta, when the run had any.
func withUsage(out ToolOutcome, res Result) ToolOutcome {
	if len(res.Usage) == 0 {
		return out
	}
	if out.Meta == nil {
		out.Meta = map[string]any{}
	}
	u := runUsage{Usage: res.Usage}
	if res.Cost != "" {
		u.Cost, u.Currency = res.Cost, res.Currency
	}
	out.Meta[UsageMetaKey] = u
	return out
}

// metadataOf reads a message's metadata; a run that never ended has none.
func metadataOf(m types.RuleMsg) map[string]string {
	if m.Metadata == nil {
		return nil
	}
	return m.Metadata.Values()
}
