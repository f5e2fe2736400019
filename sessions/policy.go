package sessions

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
)

// Policy says what of a run enters the session's history.
type Policy string

// The memory policies.
const (
	// PolicyFull keeps the whole transcript: assistant messages with their
	// tool calls, and every tool result, failures included.
	PolicyFull Policy = "full"
	// PolicyFinal keeps the final answer only; the tool calls and results
	// stay in the run's scratchpad. A run that ends on a front-end tool
	// call keeps its calls until they are answered, so that the history
	// stays valid.
	PolicyFinal Policy = "final"
	// PolicyToolSummaries keeps the transcript, with each tool result
	// longer than ToolResultLimit characters replaced by a short summary
	// the LLM writes.
	PolicyToolSummaries Policy = "tool_summaries"
)

// ParsePolicy checks a policy name; "" is PolicyFull.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case "":
		return PolicyFull, nil
	case PolicyFull, PolicyFinal, PolicyToolSummaries:
		return p, nil
	}
	return "", fmt.Errorf("%q is not a memory policy (full, final, tool_summaries)", s)
}

// DefaultToolResultLimit is ToolResultLimit's default, in characters.
const DefaultToolResultLimit = 2000

// ToolSummaryPrompt is the system prompt of the request that summarises a
// long tool result for the history (PolicyToolSummaries).
const ToolSummaryPrompt = "You shorten tool results for an AI assistant's conversation history. " +
	"Summarise the tool result below in a few sentences: keep every name, number, identifier, path and finding the conversation may need later, " +
	"and say if the tool failed. Answer with the summary only."

// apply returns what of a run's added messages the session keeps.
func (c *Conversation) apply(ctx context.Context, added []events.Message, llm *agent.Client, emit func(events.Event)) []events.Message {
	switch c.cfg.Memory {
	case PolicyFinal:
		if len(pendingCalls(added)) > 0 {
			return added
		}
		if i := lastAssistant(added); i >= 0 {
			final := added[i]
			final.ToolCalls = nil
			return []events.Message{final}
		}
		return added
	case PolicyToolSummaries:
		out := make([]events.Message, len(added))
		copy(out, added)
		limit := c.cfg.ToolResultLimit
		for i := range out {
			m := &out[i]
			if m.Role != events.RoleTool || utf8.RuneCountInString(m.Content) <= limit {
				continue
			}
			m.Content = c.summariseResult(ctx, llm, emit, toolCallOf(out[:i], m.ToolCallID), m.Content, limit)
		}
		return out
	}
	return added
}

// summariseResult replaces one long tool result with the LLM's summary of
// it. When the summary cannot be had, the result is cut to limit
// characters instead, the cut is marked, and a warning event says why.
func (c *Conversation) summariseResult(ctx context.Context, llm *agent.Client, emit func(events.Event), call events.ToolCall, content string, limit int) string {
	n := utf8.RuneCountInString(content)
	in := "Tool: " + call.Name + "\nArguments: " + call.Arguments + "\nResult:\n" + content
	sum, err := complete(ctx, llm, ToolSummaryPrompt, in)
	if err == nil && strings.TrimSpace(sum) != "" {
		return fmt.Sprintf("[Summary of a %d-character tool result, for the history]\n%s", n, strings.TrimSpace(sum))
	}
	if err == nil {
		err = fmt.Errorf("the LLM answered with no summary")
	}
	c.warn(emit, "tool result of "+call.Name+" could not be summarised, so it was cut: "+err.Error())
	return fmt.Sprintf("%s\n[cut from %d characters for the history]", cutRunes(content, limit), n)
}

func toolCallOf(before []events.Message, id string) events.ToolCall {
	for i := len(before) - 1; i >= 0; i-- {
		for _, tc := range before[i].ToolCalls {
			if tc.ID == id {
				return tc
			}
		}
	}
	return events.ToolCall{ID: id, Name: "unknown"}
}

func cutRunes(s string, n int) string {
	i := 0
	for k := range s {
		if i == n {
			return s[:k]
		}
		i++
	}
	return s
}

// complete asks llm for one answer without tools: system, then user. Its
// usage counts in the run's (the ledger in ctx).
func complete(ctx context.Context, llm *agent.Client, system, user string) (string, error) {
	if llm == nil {
		return "", fmt.Errorf("no LLM")
	}
	t, err := llm.Complete(ctx, &agent.Request{Messages: []events.Message{
		{Role: events.RoleSystem, Content: system}, {Role: events.RoleUser, Content: user}}}, false, nil, nil)
	if err != nil {
		return "", err
	}
	model := t.Model
	if model == "" {
		model = llm.Model()
	}
	agent.LedgerFrom(ctx).Add(t.Provider, model, t.Usage)
	return t.Content, nil
}

// warn emits a session warning: something the session did differently
// from its configuration, said rather than done silently.
func (c *Conversation) warn(emit func(events.Event), msg string) {
	emit(customEvent(EventWarning, map[string]any{"id": c.rec.ID, "message": msg}))
}

// now is the conversation's clock.
func (c *Conversation) now() time.Time { return time.Now().UTC() }
