package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
)

// Compaction settings: when a history is over its budget, its oldest turns
// are summarised by the LLM into one summary message instead of being
// dropped.
type CompactionConfig struct {
	// KeepTurns is how many recent turns stay verbatim (at least 1).
	KeepTurns int
	// Prompt replaces CompactionPrompt.
	Prompt string
}

// DefaultKeepTurns is CompactionConfig.KeepTurns' default.
const DefaultKeepTurns = 2

// CompactionPrompt is the system prompt of a compaction request.
const CompactionPrompt = "You compact the older part of a conversation between a user and an AI assistant into a summary that replaces it in the assistant's memory. " +
	"Keep every fact, decision, preference, name, number, identifier, file path, open question and promise the assistant may need later; " +
	"say which tools were used and what they found. Merge the earlier summary, if any, into yours. " +
	"Write in the conversation's language, in plain sentences or short lists, and answer with the summary only."

// SummaryPrefix starts the message that carries a session's summary to the
// model (a system message after the agent's prompt).
const SummaryPrefix = "Summary of the earlier conversation (older turns were compacted):\n"

// summaryMessage is the message that carries summary to the model.
func summaryMessage(summary string) events.Message {
	return events.Message{Role: events.RoleSystem, Content: SummaryPrefix + summary}
}

var errNothingToCompact = errors.New("no turn is old enough to compact")

// compact summarises the turns of hist before its last keep turns, with
// the previous summary, into a new summary.
func compact(ctx context.Context, llm *agent.Client, cc *CompactionConfig, hist []events.Message, summary string) ([]events.Message, string, Compaction, error) {
	starts := turnStarts(hist)
	keep := max(cc.KeepTurns, 1)
	if len(starts) <= keep {
		return hist, summary, Compaction{}, errNothingToCompact
	}
	cut := starts[len(starts)-keep]
	old := hist[:cut]
	prompt := cc.Prompt
	if prompt == "" {
		prompt = CompactionPrompt
	}
	out, err := complete(ctx, llm, prompt, Transcript(summary, old))
	if err != nil {
		return hist, summary, Compaction{}, err
	}
	out = strings.TrimSpace(out)
	if out == "" {
		return hist, summary, Compaction{}, errors.New("the LLM answered with an empty summary")
	}
	rec := Compaction{Messages: len(old), Turns: len(starts) - keep, Summary: out}
	return hist[cut:], out, rec, nil
}

// Transcript writes messages as the text a compaction request reads,
// after the earlier summary when there is one.
func Transcript(summary string, msgs []events.Message) string {
	var b strings.Builder
	if summary != "" {
		b.WriteString("Earlier summary:\n")
		b.WriteString(summary)
		b.WriteString("\n\n")
	}
	b.WriteString("Conversation to summarise:\n")
	for _, m := range msgs {
		switch m.Role {
		case events.RoleTool:
			fmt.Fprintf(&b, "[tool result %s%s] %s\n", m.ToolCallID, errMark(m.Error), m.Content)
		case events.RoleAssistant:
			if m.Content != "" {
				fmt.Fprintf(&b, "[assistant] %s\n", m.Content)
			}
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "[assistant called %s, id %s] %s\n", tc.Name, tc.ID, tc.Arguments)
			}
		default:
			fmt.Fprintf(&b, "[%s] %s\n", m.Role, m.Content)
		}
	}
	return b.String()
}

func errMark(e string) string {
	if e == "" {
		return ""
	}
	return ", failed: " + e
}

// Custom event names of sessions.
const (
	// EventSession says which session a run continues: its id, scope,
	// the history messages loaded, how many were pruned, the model.
	EventSession = "ruleagent.session"
	// EventCompacted says that old turns were compacted: how many, the
	// estimated tokens before and after, and the summary.
	EventCompacted = "ruleagent.session_compacted"
	// EventWarning says the session did something other than configured
	// (a compaction or a summary that failed, and what was done instead).
	EventWarning = "ruleagent.session_warning"
)

func customEvent(name string, v map[string]any) events.Event {
	b, _ := json.Marshal(v)
	return events.Event{Type: events.Custom, Name: name, Value: b}
}
