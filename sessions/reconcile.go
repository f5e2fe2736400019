package sessions

import (
	"strings"

	"github.com/ruleagent/ruleagent/events"
)

// Reconciled is a request's messages set against a stored history.
type Reconciled struct {
	// System are the client's system and developer messages: they apply
	// to this run and are not stored.
	System []events.Message
	// History is what the run continues: the stored history, or the
	// client's own when Replaced.
	History []events.Message
	// New are the messages the session does not hold yet: user messages,
	// and results of the calls a run left pending.
	New []events.Message
	// Replaced is set when the client sent a history that does not
	// continue the stored one (an edited or regenerated conversation, or
	// a session that expired): the client's history replaces it.
	Replaced bool
}

// Reconcile tells which of a request's messages are new to a session
// whose history is stored, so that a client may send only its new message
// or the whole conversation, and nothing is stored twice. The rule:
//
//   - Every assistant message comes from the server: a request without
//     one holds only new messages, which continue the stored history.
//   - A request with assistant messages carries history. Its last
//     assistant message must be the stored history's last (same id when
//     both have one, as AG-UI clients keep ours; else tool calls the
//     stored message made, or text that ends with the stored text, as an
//     OpenAI client sees only its own tools' calls and the agent's tool
//     activity before the answer). What follows it
//     is new, less the tool results the session already holds.
//   - Otherwise the client's history replaces the stored one.
func Reconcile(stored, incoming []events.Message) Reconciled {
	var r Reconciled
	conv := make([]events.Message, 0, len(incoming))
	for _, m := range incoming {
		if m.Role == events.RoleSystem || m.Role == events.RoleDeveloper {
			r.System = append(r.System, m)
		} else {
			conv = append(conv, m)
		}
	}
	last := lastAssistant(conv)
	if last < 0 {
		r.History, r.New = stored, conv
		return r
	}
	sa := lastAssistant(stored)
	if sa < 0 || !sameAssistant(&conv[last], &stored[sa]) {
		r.History, r.New, r.Replaced = conv[:last+1], conv[last+1:], true
		return r
	}
	r.History = stored
	for _, m := range conv[last+1:] {
		if m.Role == events.RoleTool && answeredAfter(stored[sa+1:], m.ToolCallID) {
			continue
		}
		r.New = append(r.New, m)
	}
	return r
}

// sameAssistant reports whether the client's assistant message c is the
// stored message s.
func sameAssistant(c, s *events.Message) bool {
	if c.ID != "" && s.ID != "" {
		return c.ID == s.ID
	}
	if len(c.ToolCalls) > 0 {
		// An OpenAI client sees only the calls of its own tools.
		for _, tc := range c.ToolCalls {
			if !callsHave(s.ToolCalls, tc.ID) {
				return false
			}
		}
		return true
	}
	st := strings.TrimSpace(s.Content)
	return st != "" && strings.HasSuffix(strings.TrimSpace(c.Content), st)
}
