package aguicheck

// Cases for the *_CHUNK shorthand, which the client expands into START /
// CONTENT / END before verifying.
var chunkCases = []ruleCase{
	{
		name: "text, tool and reasoning chunks, closed by the next event and by RUN_FINISHED",
		events: run(
			`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","delta":"Hel"}`,
			`{"type":"TEXT_MESSAGE_CHUNK","delta":"lo","role":"assistant"}`,
			`{"type":"TOOL_CALL_CHUNK","toolCallId":"c1","toolCallName":"f","parentMessageId":"m1","delta":"{"}`,
			`{"type":"TOOL_CALL_CHUNK","delta":"}"}`,
			`{"type":"REASONING_MESSAGE_CHUNK","messageId":"r1","delta":"hmm","subagentRunId":"s1"}`,
			`{"type":"REASONING_MESSAGE_CHUNK","delta":"…"}`,
		),
	},
	{
		name:   "a first text chunk needs a messageId",
		events: run(`{"type":"TEXT_MESSAGE_CHUNK","delta":"x"}`),
		want:   []string{"event 1 (TEXT_MESSAGE_CHUNK): First TEXT_MESSAGE_CHUNK must have a messageId"},
	},
	{
		name:   "a first tool chunk needs a toolCallName",
		events: run(`{"type":"TOOL_CALL_CHUNK","toolCallId":"c1","delta":"{}"}`),
		want:   []string{"event 1 (TOOL_CALL_CHUNK): First TOOL_CALL_CHUNK must have a toolCallName"},
	},
	{
		name:   "a continuation chunk may not change the role",
		events: run(`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","delta":"x"}`, `{"type":"TEXT_MESSAGE_CHUNK","delta":"y","role":"user"}`),
		want:   []string{"event 2 (TEXT_MESSAGE_CHUNK): Cannot continue text message 'm1': chunk role 'user' does not match the open stream's role 'assistant'."},
	},
	{
		name:   "a continuation chunk may not change the tool name",
		events: run(`{"type":"TOOL_CALL_CHUNK","toolCallId":"c1","toolCallName":"f"}`, `{"type":"TOOL_CALL_CHUNK","toolCallId":"c1","toolCallName":"g","delta":"{}"}`),
		want:   []string{"event 2 (TOOL_CALL_CHUNK): Cannot continue tool call 'c1': chunk toolCallName 'g' does not match the open stream's toolCallName 'f'."},
	},
	{
		name:   "a chunk tagged unlike its open stream",
		events: run(`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","delta":"x","subagentRunId":"s1"}`, `{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","delta":"y","subagentRunId":"s2"}`),
		want:   []string{"event 2 (TEXT_MESSAGE_CHUNK): Cannot continue text message 'm1': chunk subagentRunId 's2' does not match the open stream's subagent 's1'."},
	},
	{
		name: "an untagged id-less chunk with two subagent streams open",
		events: run(
			`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","delta":"x","subagentRunId":"s1"}`,
			`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m2","delta":"x","subagentRunId":"s2"}`,
			`{"type":"TEXT_MESSAGE_CHUNK","delta":"?"}`,
		),
		want: []string{"event 3 (TEXT_MESSAGE_CHUNK): Ambiguous TEXT_MESSAGE_CHUNK: it carries neither a messageId nor a subagentRunId, but 2 lanes have an open text message."},
	},
	{
		name:   "an explicit END after chunks closes the message twice",
		events: run(`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","delta":"x"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`),
		want:   []string{"event 2 (TEXT_MESSAGE_END): Cannot send 'TEXT_MESSAGE_END' event: No active text message found with ID 'm1'."},
	},
}
