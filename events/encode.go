package events

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the event's JSON object to b. It writes the fields the
// AG-UI schema of e.Type requires, and the optional ones only when they are
// set, so no field is ever null. It does not allocate beyond growing b.
func (e *Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, e.Type...)
	b = append(b, '"')
	if e.Timestamp != 0 {
		b = append(b, `,"timestamp":`...)
		b = strconv.AppendInt(b, e.Timestamp, 10)
	}
	switch e.Type {
	case RunStarted:
		b = field(b, "threadId", e.ThreadID)
		b = field(b, "runId", e.RunID)
		b = optField(b, "protocolVersion", e.ProtocolVersion)
		b = optField(b, "parentRunId", e.ParentRunID)
	case RunFinished:
		b = field(b, "threadId", e.ThreadID)
		b = field(b, "runId", e.RunID)
		b = rawField(b, "result", e.Result)
		if e.Outcome == OutcomeInterrupt {
			b = appendInterrupts(b, e.Interrupts)
		} else {
			b = appendOutcome(b, e.Outcome, e.PendingToolCallIDs)
		}
		b = appendUsage(b, e.Usage)
	case RunError:
		b = field(b, "message", e.Message)
		b = optField(b, "code", e.Code)
		b = appendUsage(b, e.Usage)
	case StepStarted, StepFinished:
		b = field(b, "stepName", e.StepName)
	case TextMessageStart:
		b = field(b, "messageId", e.MessageID)
		b = optField(b, "role", e.Role)
	case TextMessageContent, ReasoningMessageContent:
		b = field(b, "messageId", e.MessageID)
		b = field(b, "delta", e.Delta)
	case TextMessageEnd, ReasoningStart, ReasoningMessageEnd, ReasoningEnd:
		b = field(b, "messageId", e.MessageID)
	case ReasoningMessageStart:
		b = field(b, "messageId", e.MessageID)
		b = field(b, "role", "reasoning")
	case ToolCallStart:
		b = field(b, "toolCallId", e.ToolCallID)
		b = field(b, "toolCallName", e.ToolCallName)
		b = optField(b, "parentMessageId", e.ParentMessageID)
	case ToolCallArgs:
		b = field(b, "toolCallId", e.ToolCallID)
		b = field(b, "delta", e.Delta)
	case ToolCallEnd:
		b = field(b, "toolCallId", e.ToolCallID)
	case ToolCallResult:
		b = field(b, "messageId", e.MessageID)
		b = field(b, "toolCallId", e.ToolCallID)
		b = field(b, "content", e.Content)
		b = field(b, "role", "tool")
	case ActivitySnapshot:
		b = field(b, "messageId", e.MessageID)
		b = field(b, "activityType", e.ActivityType)
		b = rawFieldOr(b, "content", e.Activity, "{}")
	case ActivityDelta:
		b = field(b, "messageId", e.MessageID)
		b = field(b, "activityType", e.ActivityType)
		b = rawFieldOr(b, "patch", e.Patch, "[]")
	case SubagentStarted:
		b = field(b, "name", e.Name)
		b = optField(b, "description", e.Description)
		b = optField(b, "parentSubagentRunId", e.ParentSubagentRunID)
		b = optField(b, "parentToolCallId", e.ParentToolCallID)
		b = optField(b, "parentMessageId", e.ParentMessageID)
	case SubagentFinished:
		b = rawField(b, "result", e.Result)
		if e.Outcome == OutcomeSuspended {
			b = appendSuspended(b, e.Interrupts)
		}
	case SubagentError:
		b = field(b, "message", e.Message)
		b = optField(b, "code", e.Code)
	case Custom:
		b = field(b, "name", e.Name)
		if len(e.Value) > 0 {
			b = rawField(b, "value", e.Value)
		} else {
			b = append(b, `,"value":{}`...)
		}
	}
	// RUN_* events carry no attribution (the client strips it as unknown);
	// sub-agent runs are told apart by SUBAGENT_* events instead.
	if e.SubagentRunID != "" && e.Type != RunStarted && e.Type != RunFinished && e.Type != RunError {
		b = field(b, "subagentRunId", e.SubagentRunID)
	}
	if !e.Meta.IsZero() {
		b = e.Meta.appendJSON(b)
	}
	return append(b, '}')
}

// MarshalJSON implements json.Marshaler.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

func (m *Meta) appendJSON(b []byte) []byte {
	b = append(b, `,"metadata":{`...)
	n := len(b)
	b = metaStr(b, n, "toolType", m.ToolType)
	b = metaStr(b, n, "targetId", m.TargetID)
	b = metaStr(b, n, "toolCallId", m.ToolCallID)
	b = metaStr(b, n, "nodeId", m.NodeID)
	b = metaStr(b, n, "chainId", m.ChainID)
	b = metaStr(b, n, "model", m.Model)
	b = metaStr(b, n, "errorKind", m.ErrorKind)
	b = metaInt(b, n, "step", int64(m.Step))
	b = metaInt(b, n, "durationMs", m.DurationMs)
	b = metaInt(b, n, "attempt", int64(m.Attempt))
	b = metaInt(b, n, "status", int64(m.Status))
	b = metaInt(b, n, "inputTokens", m.InputTokens)
	b = metaInt(b, n, "outputTokens", m.OutputTokens)
	b = metaStr(b, n, "cost", m.Cost)
	b = metaStr(b, n, "currency", m.Currency)
	b = metaBool(b, n, "isError", m.IsError)
	b = metaBool(b, n, "truncated", m.Truncated)
	b = metaBool(b, n, "argsRewritten", m.ArgsRewritten)
	return append(b, '}')
}

func metaKey(b []byte, start int, key string) []byte {
	if len(b) > start {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, `":`...)
}

func metaStr(b []byte, start int, key, v string) []byte {
	if v == "" {
		return b
	}
	return appendString(metaKey(b, start, key), v)
}

func metaInt(b []byte, start int, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(metaKey(b, start, key), v, 10)
}

func metaBool(b []byte, start int, key string, v bool) []byte {
	if !v {
		return b
	}
	return append(metaKey(b, start, key), "true"...)
}

func field(b []byte, key, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendString(b, v)
}

func optField(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return field(b, key, v)
}

func rawField(b []byte, key string, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return append(b, v...)
}

// rawFieldOr writes a required JSON field: v, or def when v is empty.
func rawFieldOr(b []byte, key string, v []byte, def string) []byte {
	if len(v) == 0 {
		v = []byte(def)
	}
	return rawField(b, key, v)
}

// appendSuspended writes a SUBAGENT_FINISHED outcome suspended, with the
// ids of the interrupts it waits for.
func appendSuspended(b []byte, ins []Interrupt) []byte {
	b = append(b, `,"outcome":{"type":"suspended"`...)
	b = appendIDs(b, "interruptIds", len(ins), func(i int) string { return ins[i].ID })
	return append(b, '}')
}

// appendIDs writes a field holding a list of n ids, id(i) each; nothing
// when the list is empty.
func appendIDs(b []byte, key string, n int, id func(i int) string) []byte {
	if n == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, `":[`...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, id(i))
	}
	return append(b, ']')
}

// appendOutcome writes a RUN_FINISHED outcome: none for a plain success,
// success with the pending front-end tool calls, or another outcome type.
func appendOutcome(b []byte, outcome string, pending []string) []byte {
	if outcome == "" && len(pending) == 0 {
		return b
	}
	if outcome == "" {
		outcome = OutcomeSuccess
	}
	b = append(b, `,"outcome":{"type":`...)
	b = appendString(b, outcome)
	if outcome == OutcomeSuccess {
		b = appendIDs(b, "pendingToolCallIds", len(pending), func(i int) string { return pending[i] })
	}
	return append(b, '}')
}

// appendInterrupts writes an interrupt outcome (a rare event: encoded with
// encoding/json).
func appendInterrupts(b []byte, ins []Interrupt) []byte {
	list, err := json.Marshal(ins)
	if err != nil || len(ins) == 0 {
		list = []byte("[]")
	}
	b = append(b, `,"outcome":{"type":"interrupt","interrupts":`...)
	b = append(b, list...)
	return append(b, '}')
}

func appendUsage(b []byte, us []TokenUsage) []byte {
	if len(us) == 0 {
		return b
	}
	b = append(b, `,"usage":[`...)
	for i := range us {
		if i > 0 {
			b = append(b, ',')
		}
		u := &us[i]
		b = append(b, '{')
		n := len(b)
		b = metaStr(b, n, "provider", u.Provider)
		b = metaStr(b, n, "model", u.Model)
		b = metaInt(b, n, "inputTokens", u.InputTokens)
		b = metaInt(b, n, "outputTokens", u.OutputTokens)
		b = metaInt(b, n, "totalTokens", u.TotalTokens)
		b = metaInt(b, n, "reasoningTokens", u.ReasoningTokens)
		b = metaInt(b, n, "cachedInputTokens", u.CachedInputTokens)
		b = append(b, '}')
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, and
// U+2028/U+2029 are escaped so the output is also safe inside JavaScript.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendString appends s as a JSON string literal (exported for encoders
// that build JSON around events, such as OpenAI chunks).
func AppendString(b []byte, s string) []byte { return appendString(b, s) }
