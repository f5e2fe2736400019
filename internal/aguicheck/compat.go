package aguicheck

import "fmt"

// The client's always-on CompatibilityBoundary quietly upgrades a few pre-1.0
// shapes, printing a deprecation warning for each. The stream is then valid,
// but we never want to send them (the shim expires on 2027-09-17), so each is
// a violation here. Like the client, the shape is then removed, so later
// stages judge what the client would go on to judge.

// thinkingEvents are the retired THINKING_* events and their 1.0 replacements.
var thinkingEvents = map[string]string{
	"THINKING_START":                "REASONING_START",
	"THINKING_END":                  "REASONING_END",
	"THINKING_TEXT_MESSAGE_START":   "REASONING_MESSAGE_START",
	"THINKING_TEXT_MESSAGE_CONTENT": "REASONING_MESSAGE_CONTENT",
	"THINKING_TEXT_MESSAGE_END":     "REASONING_MESSAGE_END",
}

// legacyNulls are the whole-field nulls the boundary turns into absence:
// rawEvent on any event, and these per type. (Legacy nulls nested in
// RUN_STARTED.input are left to the schema stage, which reports them as the
// null optional fields they are.)
var legacyNulls = map[string][]string{
	"TOOL_CALL_START":   {"parentMessageId"},
	"TOOL_CALL_CHUNK":   {"parentMessageId"},
	"RUN_FINISHED":      {"result", "outcome"},
	"SUBAGENT_FINISHED": {"result"},
}

// checkCompat reports deprecated shapes and removes the legacy nulls from ev.
// It returns false when the event is a retired type that later stages should
// not see (the client would translate it, and we have already objected).
func checkCompat(ev map[string]any, typ string) (problems []string, keep bool) {
	if replacement, retired := thinkingEvents[typ]; retired {
		return []string{fmt.Sprintf("deprecated pre-1.0 event: the client converts it to %s with a warning; send %s", replacement, replacement)}, false
	}
	for _, key := range append([]string{"rawEvent"}, legacyNulls[typ]...) {
		if val, present := ev[key]; present && val == nil {
			problems = append(problems, fmt.Sprintf("'/%s' is null: a deprecated pre-1.0 spelling the client converts with a warning; omit the field", key))
			delete(ev, key)
		}
	}
	return problems, true
}
