package aguicheck

import (
	"bytes"
	"testing"
)

// fullRun is a realistic agent run: reasoning, streamed text, two parallel
// tool calls, steps, and a nested subagent with its own text and tool call
// (running the same step name as its parent), then RUN_FINISHED with usage.
var fullRun = stream(
	`{"type":"RUN_STARTED","threadId":"thread-1","runId":"run-1","timestamp":1767225600000}`,
	`{"type":"STEP_STARTED","stepName":"agent"}`,
	`{"type":"REASONING_START","messageId":"rs1"}`,
	`{"type":"REASONING_MESSAGE_START","messageId":"rs1","role":"reasoning"}`,
	`{"type":"REASONING_MESSAGE_CONTENT","messageId":"rs1","delta":"The user wants the weather; "}`,
	`{"type":"REASONING_MESSAGE_CONTENT","messageId":"rs1","delta":"search, then fetch."}`,
	`{"type":"REASONING_MESSAGE_END","messageId":"rs1"}`,
	`{"type":"REASONING_END","messageId":"rs1"}`,
	`{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}`,
	`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Let me "}`,
	`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"check."}`,
	`{"type":"TEXT_MESSAGE_END","messageId":"m1"}`,
	`{"type":"STEP_STARTED","stepName":"tools"}`,
	`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"search","parentMessageId":"m1"}`,
	`{"type":"TOOL_CALL_START","toolCallId":"c2","toolCallName":"fetch","parentMessageId":"m1"}`,
	`{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{\"q\":"}`,
	`{"type":"TOOL_CALL_ARGS","toolCallId":"c2","delta":"{\"url\":\"https://example.org\"}"}`,
	`{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"\"Paris\"}"}`,
	`{"type":"TOOL_CALL_END","toolCallId":"c2"}`,
	`{"type":"TOOL_CALL_END","toolCallId":"c1"}`,
	`{"type":"TOOL_CALL_RESULT","messageId":"tr1","toolCallId":"c1","role":"tool","content":"18°C, sunny"}`,
	`{"type":"TOOL_CALL_RESULT","messageId":"tr2","toolCallId":"c2","content":[{"type":"text","text":"<html>…</html>"}]}`,
	`{"type":"TOOL_CALL_START","toolCallId":"c3","toolCallName":"delegate","parentMessageId":"m1"}`,
	`{"type":"TOOL_CALL_ARGS","toolCallId":"c3","delta":"{\"task\":\"verify\"}"}`,
	`{"type":"TOOL_CALL_END","toolCallId":"c3"}`,
	`{"type":"SUBAGENT_STARTED","subagentRunId":"sub-1","name":"checker","parentToolCallId":"c3","parentMessageId":"m1"}`,
	`{"type":"STEP_STARTED","stepName":"tools","subagentRunId":"sub-1"}`,
	`{"type":"TEXT_MESSAGE_START","messageId":"m2","role":"assistant","subagentRunId":"sub-1"}`,
	`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m2","delta":"Checking the source.","subagentRunId":"sub-1"}`,
	`{"type":"TEXT_MESSAGE_END","messageId":"m2","subagentRunId":"sub-1"}`,
	`{"type":"TOOL_CALL_START","toolCallId":"c4","toolCallName":"lookup","parentMessageId":"m2","subagentRunId":"sub-1"}`,
	`{"type":"TOOL_CALL_ARGS","toolCallId":"c4","delta":"{}","subagentRunId":"sub-1"}`,
	`{"type":"TOOL_CALL_END","toolCallId":"c4","subagentRunId":"sub-1"}`,
	`{"type":"TOOL_CALL_RESULT","messageId":"tr4","toolCallId":"c4","content":"confirmed","subagentRunId":"sub-1"}`,
	`{"type":"STEP_FINISHED","stepName":"tools","subagentRunId":"sub-1"}`,
	`{"type":"SUBAGENT_FINISHED","subagentRunId":"sub-1","result":{"verified":true},"outcome":{"type":"success"}}`,
	`{"type":"TOOL_CALL_RESULT","messageId":"tr3","toolCallId":"c3","content":"verified"}`,
	`{"type":"STEP_FINISHED","stepName":"tools"}`,
	`{"type":"TEXT_MESSAGE_START","messageId":"m3","role":"assistant"}`,
	`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m3","delta":"It is 18°C and sunny in Paris."}`,
	`{"type":"TEXT_MESSAGE_END","messageId":"m3","metadata":{"finishReason":"stop"}}`,
	`{"type":"CUSTOM","name":"ruleagent.node","value":{"chain":"weather","node":"llm"},"metadata":{"ruleagent":{"durationMs":812}}}`,
	`{"type":"STEP_FINISHED","stepName":"agent"}`,
	`{"type":"RUN_FINISHED","threadId":"thread-1","runId":"run-1","result":{"answer":"18°C"},"outcome":{"type":"success"},"usage":[{"provider":"openai","model":"gpt-4o","inputTokens":1200,"outputTokens":85,"totalTokens":1285,"cachedInputTokens":1000},{"provider":"anthropic","model":"claude","inputTokens":300,"outputTokens":40,"totalTokens":340,"reasoningTokens":12}]}`,
)

// otherEventsRun covers the event kinds fullRun does not: the RUN_STARTED
// input echo, snapshots and deltas, activities, RAW, encrypted values, the
// *_CHUNK shorthand in two subagent lanes at once, SUBAGENT_ERROR, and a run
// that finishes interrupted.
var otherEventsRun = stream(
	`{"type":"RUN_STARTED","threadId":"thread-2","runId":"run-2","parentRunId":"run-1","protocolVersion":"1.0","input":{"threadId":"thread-2","runId":"run-2","messages":[{"id":"u1","role":"user","content":[{"type":"text","text":"Plan my trip"},{"type":"image","source":{"type":"data","value":"iVBORw0KGgo=","mimeType":"image/png"}}]}],"tools":[],"context":[{"description":"locale","value":"fr-FR"}],"resume":[{"interruptId":"i0","status":"resolved","payload":{"ok":true}}]}}`,
	`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u1","role":"user","content":"Plan my trip"},{"id":"a0","role":"assistant","content":"Sure.","toolCalls":[{"id":"c0","type":"function","function":{"name":"plan","arguments":"{}"}}]},{"id":"t0","role":"tool","content":"ok","toolCallId":"c0"},{"id":"r0","role":"reasoning","content":"…"},{"id":"act0","role":"activity","activityType":"plan","content":{"steps":[]}}]}`,
	`{"type":"STATE_SNAPSHOT","snapshot":{"trip":{"days":[]}}}`,
	`{"type":"STATE_DELTA","delta":[{"op":"add","path":"/trip/days/-","value":{"city":"Lyon"}},{"op":"test","path":"/trip/days/0/city","value":"Lyon"}]}`,
	`{"type":"ACTIVITY_SNAPSHOT","messageId":"act1","activityType":"progress","content":{"done":0}}`,
	`{"type":"ACTIVITY_DELTA","messageId":"act1","activityType":"progress","patch":[{"op":"replace","path":"/done","value":1}]}`,
	`{"type":"SUBAGENT_STARTED","subagentRunId":"sa","name":"hotels"}`,
	`{"type":"SUBAGENT_STARTED","subagentRunId":"sb","name":"trains"}`,
	`{"type":"TEXT_MESSAGE_CHUNK","messageId":"ma","delta":"Hotel ","subagentRunId":"sa"}`,
	`{"type":"TEXT_MESSAGE_CHUNK","messageId":"mb","delta":"Train ","subagentRunId":"sb"}`,
	`{"type":"TEXT_MESSAGE_CHUNK","delta":"found.","subagentRunId":"sa"}`,
	`{"type":"TOOL_CALL_CHUNK","toolCallId":"cb","toolCallName":"book","parentMessageId":"mb","subagentRunId":"sb","delta":"{\"seat\":"}`,
	`{"type":"TOOL_CALL_CHUNK","delta":"12}","subagentRunId":"sb"}`,
	`{"type":"REASONING_ENCRYPTED_VALUE","subtype":"tool-call","entityId":"cb","encryptedValue":"enc","subagentRunId":"sb"}`,
	`{"type":"SUBAGENT_ERROR","subagentRunId":"sb","message":"no seats"}`,
	`{"type":"REASONING_MESSAGE_CHUNK","messageId":"ra","delta":"compare prices","subagentRunId":"sa"}`,
	`{"type":"SUBAGENT_FINISHED","subagentRunId":"sa","outcome":{"type":"suspended","interruptIds":["i1"]}}`,
	`{"type":"RAW","event":{"provider":"event"},"source":"anthropic"}`,
	`{"type":"TEXT_MESSAGE_START","messageId":"a0"}`,
	`{"type":"TEXT_MESSAGE_END","messageId":"a0"}`,
	`{"type":"RUN_FINISHED","threadId":"thread-2","runId":"run-2","outcome":{"type":"interrupt","interrupts":[{"id":"i1","reason":"confirm","message":"Book the hotel?","subagentRunId":"sa","responseSchema":{"type":"boolean"},"expiresAt":"2026-01-01T00:00:00Z"}]}}`,
)

func TestFullRunPasses(t *testing.T) {
	if errs := Check(fullRun); errs != nil {
		t.Fatalf("the full run must pass, got: %v", errs)
	}
	if errs := Check(otherEventsRun); errs != nil {
		t.Fatalf("the run of other events must pass, got: %v", errs)
	}
	jsonl := append(bytes.Join(fullRun, []byte("\n")), '\n')
	if errs := CheckJSONL(bytes.NewReader(jsonl)); errs != nil {
		t.Fatalf("the full run as JSONL must pass, got: %v", errs)
	}
	VerifyAllWithClient(t, fullRun, otherEventsRun)
}

// TestFullRunTruncatedFails: every proper prefix of the run breaks ruleagent's
// contract (no terminal event), and removing RUN_FINISHED's predecessor
// leaves a step open, so neither slips through.
func TestFullRunTruncatedFails(t *testing.T) {
	for n := 1; n < len(fullRun); n++ {
		if errs := Check(fullRun[:n]); errs == nil {
			t.Errorf("the first %d events passed, but the stream has no terminal event", n)
		}
	}
	withoutStepEnd := append(append([][]byte{}, fullRun[:len(fullRun)-2]...), fullRun[len(fullRun)-1])
	assertViolations(t, Check(withoutStepEnd), []string{"Cannot send 'RUN_FINISHED' while steps are still active: agent"})
}
