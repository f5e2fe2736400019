package aguicheck

// Cases for the event shapes: the zod schemas of enforceEvents (required
// fields and their types, no null optionals, safe-integer timestamps, nested
// unions), the fields and events the client strips or drops with a warning,
// and the deprecated shapes its compatibility boundary converts.
var schemaCases = []ruleCase{
	{
		name: "every optional field well formed",
		events: run(
			`{"type":"STEP_STARTED","stepName":"s","timestamp":1700000000000,"metadata":{"k":null},"rawEvent":{"p":1}}`,
			`{"type":"STEP_FINISHED","stepName":"s","timestamp":1.0}`,
			`{"type":"CUSTOM","name":"n","value":null}`,
			`{"type":"RAW","event":{"x":1},"source":"openai"}`,
			`{"type":"STATE_SNAPSHOT","snapshot":{"a":[1]}}`,
			`{"type":"STATE_DELTA","delta":[{"op":"add","path":"/b","value":null},{"op":"remove","path":"/a/0","value":"RFC 6902 ignores extra members"},{"op":"move","from":"/b","path":"/c"}]}`,
			`{"type":"ACTIVITY_SNAPSHOT","messageId":"a1","activityType":"plan","content":{"steps":[]},"replace":false}`,
			`{"type":"ACTIVITY_DELTA","messageId":"a1","activityType":"plan","patch":[{"op":"replace","path":"/steps","value":[1]}]}`,
		),
	},
	{
		name:   "unknown event type",
		events: run(`{"type":"PROGRESS","percent":50}`),
		want:   []string{"event 1 (PROGRESS): unknown event type"},
	},
	{
		name:   "unknown field",
		events: run(`{"type":"CUSTOM","name":"n","value":1,"extra":true}`),
		want:   []string{"event 1 (CUSTOM): '/extra': unknown field"},
	},
	{
		name:   "run-scoped events carry no subagentRunId",
		events: stream(`{"type":"RUN_STARTED","threadId":"t1","runId":"r1","subagentRunId":"s1"}`, runFinished),
		want:   []string{"event 0 (RUN_STARTED): '/subagentRunId': unknown field"},
	},
	{
		name:   "unknown field nested in a message",
		events: run(`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u1","role":"user","content":"hi","mood":"ok"}]}`),
		want:   []string{"'/messages/0/mood': unknown field"},
	},
	{
		name:   "required field missing",
		events: run(`{"type":"TEXT_MESSAGE_START","messageId":"m1"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`),
		want:   []string{"event 2 (TEXT_MESSAGE_CONTENT): '/delta': required field is missing"},
	},
	{
		name:   "required field of the wrong type",
		events: run(`{"type":"STEP_STARTED","stepName":7}`),
		want:   []string{"event 1 (STEP_STARTED): '/stepName': expected a string, got number 7"},
	},
	{
		name:   "optional field null",
		events: run(`{"type":"TEXT_MESSAGE_START","messageId":"m1","name":null}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`),
		want:   []string{"event 1 (TEXT_MESSAGE_START): '/name': optional field is null"},
	},
	{
		name:   "subagentRunId null",
		events: run(`{"type":"CUSTOM","name":"n","value":1,"subagentRunId":null}`),
		want:   []string{"event 1 (CUSTOM): '/subagentRunId': optional field is null"},
	},
	{
		name:   "metadata must be an object",
		events: run(`{"type":"CUSTOM","name":"n","value":1,"metadata":[1]}`),
		want:   []string{"'/metadata': expected an object, got an array"},
	},
	{
		name:   "timestamp must be an integer",
		events: run(`{"type":"CUSTOM","name":"n","value":1,"timestamp":1700000000000.5}`),
		want:   []string{"'/timestamp': expected a safe integer, got 1700000000000.5"},
	},
	{
		name:   "timestamp must be a safe integer",
		events: run(`{"type":"CUSTOM","name":"n","value":1,"timestamp":9007199254740993}`),
		want:   []string{"'/timestamp': expected a safe integer"},
	},
	{
		name:   "text message role is an enum",
		events: run(`{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"tool"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`),
		want:   []string{`'/role': expected one of "developer", "system", "assistant", "user", got "tool"`},
	},
	{
		name:   "reasoning message start needs role reasoning",
		events: run(`{"type":"REASONING_MESSAGE_START","messageId":"r1"}`, `{"type":"REASONING_MESSAGE_END","messageId":"r1"}`),
		want:   []string{"event 1 (REASONING_MESSAGE_START): '/role': required field is missing"},
	},
	{
		name:   "CUSTOM needs a value",
		events: run(`{"type":"CUSTOM","name":"n"}`),
		want:   []string{"'/value': required field is missing"},
	},
	{
		name:   "JSON Patch paths are JSON pointers",
		events: run(`{"type":"STATE_DELTA","delta":[{"op":"add","path":"a/b","value":1}]}`),
		want:   []string{`'/delta/0/path': "a/b" is not a JSON pointer`},
	},
	{
		name:   "unknown JSON Patch op",
		events: run(`{"type":"STATE_DELTA","delta":[{"op":"merge","path":"/a","value":1}]}`),
		want:   []string{`'/delta/0': unrecognised op "merge"`},
	},
	{
		name: "RUN_FINISHED with usage and outcomes",
		events: stream(runStarted,
			`{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","result":{"ok":true},"outcome":{"type":"interrupt","interrupts":[{"id":"i1","reason":"approval","toolCallId":"c1"}]},"usage":[{"provider":"openai","model":"gpt","inputTokens":10,"outputTokens":5,"totalTokens":15}]}`),
	},
	{
		name:   "unknown RUN_FINISHED outcome",
		events: stream(runStarted, `{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","outcome":{"type":"paused"}}`),
		want:   []string{`event 1 (RUN_FINISHED): '/outcome': unrecognised type "paused"`},
	},
	{
		name:   "an interrupt outcome needs an interrupt",
		events: stream(runStarted, `{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","outcome":{"type":"interrupt","interrupts":[]}}`),
		want:   []string{"'/outcome/interrupts': expected at least 1 element(s), got 0"},
	},
	{
		name:   "token counts are non-negative",
		events: stream(runStarted, `{"type":"RUN_ERROR","message":"m","usage":[{"inputTokens":-1}]}`),
		want:   []string{"'/usage/0/inputTokens': expected a non-negative integer, got -1"},
	},
	{
		name:   "tool result content parts",
		events: run(`{"type":"TOOL_CALL_RESULT","messageId":"t1","toolCallId":"c1","role":"tool","content":[{"type":"text","text":"ok"},{"type":"image","source":{"type":"url","value":"https://x/y.png"}}]}`),
	},
	{
		name:   "unknown content part",
		events: run(`{"type":"TOOL_CALL_RESULT","messageId":"t1","toolCallId":"c1","content":[{"type":"binary","data":"AA=="}]}`),
		want:   []string{`'/content/0': unrecognised type "binary"`},
	},
	{
		name:   "RUN_STARTED echoing its input",
		events: stream(`{"type":"RUN_STARTED","threadId":"t1","runId":"r1","protocolVersion":"1.0","input":{"threadId":"t1","runId":"r1","state":null,"messages":[{"id":"u1","role":"user","content":"hi"},{"id":"a1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"id":"t1","role":"tool","content":"42","toolCallId":"c1"}],"tools":[{"name":"f","description":"d","parameters":{"type":"object"}}],"context":[],"forwardedProps":{}}}`, runFinished),
	},
	{
		name:   "RUN_STARTED input needs messages",
		events: stream(`{"type":"RUN_STARTED","threadId":"t1","runId":"r1","input":{"threadId":"t1","runId":"r1"}}`, runFinished),
		want:   []string{"'/input/messages': required field is missing"},
	},
	{
		name:   "unknown message role",
		events: run(`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"x","role":"bot","content":"hi"}]}`),
		want:   []string{`'/messages/0': unrecognised role "bot"`},
	},
	{
		name:   "legacy null parentMessageId",
		events: run(`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f","parentMessageId":null}`, `{"type":"TOOL_CALL_END","toolCallId":"c1"}`),
		want:   []string{"event 1 (TOOL_CALL_START): '/parentMessageId' is null: a deprecated pre-1.0 spelling"},
	},
	{
		name:   "legacy null rawEvent",
		events: run(`{"type":"CUSTOM","name":"n","value":1,"rawEvent":null}`),
		want:   []string{"event 1 (CUSTOM): '/rawEvent' is null: a deprecated pre-1.0 spelling"},
	},
	{
		name:   "legacy null result and outcome",
		events: stream(runStarted, `{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","result":null,"outcome":null}`),
		want:   []string{"'/result' is null", "'/outcome' is null"},
	},
	{
		name:   "retired THINKING events",
		events: run(`{"type":"THINKING_START"}`, `{"type":"THINKING_END"}`),
		want: []string{
			"event 1 (THINKING_START): deprecated pre-1.0 event: the client converts it to REASONING_START",
			"event 2 (THINKING_END): deprecated pre-1.0 event: the client converts it to REASONING_END",
		},
	},
}
