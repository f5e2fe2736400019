package sessions

import (
	"slices"
	"unicode/utf8"

	"github.com/ruleagent/ruleagent/events"
)

// Tokens estimates a message's size in tokens: about four characters a
// token, plus a few for the message's framing. It is an estimate (no
// tokenizer knows every model); budgets are written against it.
func Tokens(m *events.Message) int {
	n := utf8.RuneCountInString(m.Content) + utf8.RuneCountInString(m.Reasoning)
	for _, tc := range m.ToolCalls {
		n += len(tc.Name) + utf8.RuneCountInString(tc.Arguments) + len(tc.ID)
	}
	for _, p := range m.Parts {
		if p.Type == "image" {
			n += 85 * 4 // a low-detail image, as OpenAI counts it
		}
	}
	return (n+3)/4 + 4
}

// TokensOf sums Tokens over msgs.
func TokensOf(msgs []events.Message) int {
	t := 0
	for i := range msgs {
		t += Tokens(&msgs[i])
	}
	return t
}

// Budget bounds a history. Zero fields are no bound.
type Budget struct {
	MaxMessages int
	MaxTokens   int
}

// fits reports whether n messages of t tokens are within the budget.
func (b Budget) fits(n, t int) bool {
	return (b.MaxMessages <= 0 || n <= b.MaxMessages) && (b.MaxTokens <= 0 || t <= b.MaxTokens)
}

// Set reports whether the budget bounds anything.
func (b Budget) Set() bool { return b.MaxMessages > 0 || b.MaxTokens > 0 }

// turnStarts returns the index where each turn of msgs starts: a turn
// begins at a user message (a leading run of other messages counts as a
// turn of its own).
func turnStarts(msgs []events.Message) []int {
	var starts []int
	for i := range msgs {
		if i == 0 || msgs[i].Role == events.RoleUser && msgs[i-1].Role != events.RoleUser {
			starts = append(starts, i)
		}
	}
	return starts
}

// units splits msgs into the pieces pruning may drop: an assistant message
// with its tool calls together with their results, or any other single
// message. Dropping whole units never leaves a tool call without its
// result or a result without its call.
func units(msgs []events.Message) [][2]int {
	var out [][2]int
	for i := 0; i < len(msgs); {
		j := i + 1
		if msgs[i].Role == events.RoleAssistant && len(msgs[i].ToolCalls) > 0 {
			for j < len(msgs) && msgs[j].Role == events.RoleTool {
				j++
			}
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

// Prune drops the oldest messages of msgs until they fit b, extra counting
// towards it (the summary: extraMessages messages of extraTokens tokens).
// Whole turns go first, so that the history still starts with a user
// message; when the newest turn alone is over the budget, its oldest tool
// rounds go, keeping its first unit and its last. A tool call and
// its result are always dropped together. It returns the kept messages
// and how many were dropped.
func Prune(msgs []events.Message, b Budget, extraMessages, extraTokens int) ([]events.Message, int) {
	if !b.Set() {
		return msgs, 0
	}
	total := TokensOf(msgs) + extraTokens
	fits := func(from int, tokens int) bool { return b.fits(len(msgs)-from+extraMessages, tokens) }
	from := 0
	starts := turnStarts(msgs)
	for k := 0; k+1 < len(starts) && !fits(from, total); k++ {
		total -= TokensOf(msgs[starts[k]:starts[k+1]])
		from = starts[k+1]
	}
	kept := msgs[from:]
	if fits(from, total) {
		return kept, from
	}
	// The newest turn alone is over: keep its first unit (its user
	// message), drop its oldest units after that, never its last.
	us := units(kept)
	cut := us[0][1] // kept[us[0][1]:cut] goes
	end := cut
	for k := 1; k+1 < len(us) && !b.fits(len(kept)-(end-cut)+extraMessages, total); k++ {
		total -= TokensOf(kept[us[k][0]:us[k][1]])
		end = us[k][1]
	}
	if end == cut {
		return kept, from
	}
	out := make([]events.Message, 0, len(kept)-(end-cut))
	out = append(out, kept[:cut]...)
	out = append(out, kept[end:]...)
	return out, from + end - cut
}

// Unanswered is the content of the result Repair gives a tool call that
// was never answered.
const Unanswered = "No result: this call was never answered."

// Repair makes msgs a history every LLM API accepts: each assistant tool
// call is followed by its result (a call left unanswered, such as a
// front-end tool call the client gave up on, gets a result saying so,
// marked as an error), and a tool result that answers no call of the
// assistant message before it is dropped. msgs is not modified; when it
// needs no repair it is returned as it is.
func Repair(msgs []events.Message) []events.Message {
	if valid(msgs) {
		return msgs
	}
	out := make([]events.Message, 0, len(msgs)+2)
	for i := 0; i < len(msgs); {
		m := msgs[i]
		if m.Role == events.RoleTool {
			i++ // an orphan: no assistant call before it
			continue
		}
		if m.Role == events.RoleAssistant && len(m.ToolCalls) > 0 {
			// A call id names one call: a repeated one is dropped (an
			// API wants one result per id).
			m.ToolCalls = uniqueCalls(m.ToolCalls)
		}
		out = append(out, m)
		i++
		if m.Role != events.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		answered := map[string]bool{}
		for ; i < len(msgs) && msgs[i].Role == events.RoleTool; i++ {
			id := msgs[i].ToolCallID
			if answered[id] || !callsHave(m.ToolCalls, id) {
				continue
			}
			answered[id] = true
			out = append(out, msgs[i])
		}
		for _, tc := range m.ToolCalls {
			if !answered[tc.ID] {
				out = append(out, events.Message{Role: events.RoleTool, ToolCallID: tc.ID, Content: Unanswered, Error: "unanswered"})
			}
		}
	}
	return out
}

// valid reports whether msgs needs no repair: every assistant tool call,
// its id unique in its message, is followed by exactly one result.
func valid(msgs []events.Message) bool {
	for i := 0; i < len(msgs); {
		m := &msgs[i]
		if m.Role == events.RoleTool {
			return false
		}
		i++
		if m.Role != events.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		if len(uniqueCalls(m.ToolCalls)) != len(m.ToolCalls) {
			return false
		}
		start := i
		for ; i < len(msgs) && msgs[i].Role == events.RoleTool; i++ {
			if !callsHave(m.ToolCalls, msgs[i].ToolCallID) || answeredAfter(msgs[start:i], msgs[i].ToolCallID) {
				return false
			}
		}
		if i-start != len(m.ToolCalls) {
			return false
		}
	}
	return true
}

// uniqueCalls is calls without the calls whose id an earlier one has;
// calls itself when no id repeats.
func uniqueCalls(calls []events.ToolCall) []events.ToolCall {
	for i := 1; i < len(calls); i++ {
		if callsHave(calls[:i], calls[i].ID) {
			out := slices.Clone(calls[:i])
			for _, c := range calls[i+1:] {
				if !callsHave(out, c.ID) {
					out = append(out, c)
				}
			}
			return out
		}
	}
	return calls
}

func callsHave(calls []events.ToolCall, id string) bool {
	for _, c := range calls {
		if c.ID == id {
			return true
		}
	}
	return false
}

// pendingCalls returns the calls of msgs' last assistant message that no
// tool message after it answers: the front-end calls a run ended on.
func pendingCalls(msgs []events.Message) []events.ToolCall {
	last := lastAssistant(msgs)
	if last < 0 {
		return nil
	}
	var out []events.ToolCall
	for _, tc := range msgs[last].ToolCalls {
		if !answeredAfter(msgs[last+1:], tc.ID) {
			out = append(out, tc)
		}
	}
	return out
}

func answeredAfter(msgs []events.Message, id string) bool {
	for i := range msgs {
		if msgs[i].Role == events.RoleTool && msgs[i].ToolCallID == id {
			return true
		}
	}
	return false
}

// lastAssistant is the index of msgs' last assistant message, or -1.
func lastAssistant(msgs []events.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == events.RoleAssistant {
			return i
		}
	}
	return -1
}
