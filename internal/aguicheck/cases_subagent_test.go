package aguicheck

// Cases for the subagent lifecycle (SUBAGENT_STARTED/FINISHED/ERROR) and for
// attribution: a continuation's subagentRunId must agree with its opener's.
var subagentCases = []ruleCase{
	{
		name: "nested subagents with attributed work",
		events: run(
			`{"type":"SUBAGENT_STARTED","subagentRunId":"s1","name":"researcher","description":"d","parentToolCallId":"c0"}`,
			`{"type":"SUBAGENT_STARTED","subagentRunId":"s2","name":"reader","parentSubagentRunId":"s1"}`,
			`{"type":"TEXT_MESSAGE_START","messageId":"m2","subagentRunId":"s2"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m2","delta":"x"}`,
			`{"type":"TEXT_MESSAGE_END","messageId":"m2","subagentRunId":"s2"}`,
			`{"type":"SUBAGENT_ERROR","subagentRunId":"s2","message":"failed","code":"E1"}`,
			`{"type":"SUBAGENT_FINISHED","subagentRunId":"s1","result":{"n":1},"outcome":{"type":"suspended","interruptIds":["i1"]}}`,
		),
	},
	{
		name:   "attribution without lifecycle events is allowed",
		events: run(`{"type":"CUSTOM","name":"n","value":1,"subagentRunId":"s9"}`),
	},
	{
		name:   "subagent already active",
		events: run(`{"type":"SUBAGENT_STARTED","subagentRunId":"s1","name":"a"}`, `{"type":"SUBAGENT_STARTED","subagentRunId":"s1","name":"a"}`, `{"type":"SUBAGENT_FINISHED","subagentRunId":"s1"}`),
		want:   []string{"event 2 (SUBAGENT_STARTED): Cannot send 'SUBAGENT_STARTED': subagent 's1' is already active. Finish it with 'SUBAGENT_FINISHED' first."},
	},
	{
		name:   "subagent id reused",
		events: run(`{"type":"SUBAGENT_STARTED","subagentRunId":"s1","name":"a"}`, `{"type":"SUBAGENT_FINISHED","subagentRunId":"s1"}`, `{"type":"SUBAGENT_STARTED","subagentRunId":"s1","name":"a"}`, `{"type":"SUBAGENT_FINISHED","subagentRunId":"s1"}`),
		want: []string{
			"event 3 (SUBAGENT_STARTED): Cannot send 'SUBAGENT_STARTED': subagent 's1' has already finished in this run. Subagent IDs are per-invocation and cannot be reused.",
			"event 4 (SUBAGENT_FINISHED): Cannot send 'SUBAGENT_FINISHED': no active subagent found with ID 's1'.",
		},
	},
	{
		name:   "parent subagent never started",
		events: run(`{"type":"SUBAGENT_STARTED","subagentRunId":"s2","name":"a","parentSubagentRunId":"s1"}`),
		want:   []string{"event 1 (SUBAGENT_STARTED): Cannot send 'SUBAGENT_STARTED': parentSubagentRunId 's1' has not been started in this run."},
	},
	{
		name:   "subagent finished but never started",
		events: run(`{"type":"SUBAGENT_FINISHED","subagentRunId":"s1"}`),
		want:   []string{"event 1 (SUBAGENT_FINISHED): Cannot send 'SUBAGENT_FINISHED': no active subagent found with ID 's1'. A 'SUBAGENT_STARTED' event must be sent first."},
	},
	{
		name:   "subagent errored but never started",
		events: run(`{"type":"SUBAGENT_ERROR","subagentRunId":"s1","message":"m"}`),
		want:   []string{"event 1 (SUBAGENT_ERROR): Cannot send 'SUBAGENT_ERROR': no active subagent found with ID 's1'."},
	},
	{
		name:   "run finished with a subagent active",
		events: run(`{"type":"SUBAGENT_STARTED","subagentRunId":"s1","name":"a"}`),
		want:   []string{"event 2 (RUN_FINISHED): Cannot send 'RUN_FINISHED' while subagents are still active: s1"},
	},
	{
		name:   "subagent lifecycle events need their identity",
		events: run(`{"type":"SUBAGENT_STARTED","name":"a"}`),
		want:   []string{"event 1 (SUBAGENT_STARTED): '/subagentRunId': required field is missing"},
	},
	{
		name:   "SUBAGENT_ERROR needs a message",
		events: run(`{"type":"SUBAGENT_STARTED","subagentRunId":"s1","name":"a"}`, `{"type":"SUBAGENT_ERROR","subagentRunId":"s1"}`),
		want:   []string{"event 2 (SUBAGENT_ERROR): '/message': required field is missing"},
	},
	{
		name:   "subagent optional field null",
		events: run(`{"type":"SUBAGENT_STARTED","subagentRunId":"s1","name":"a","description":null}`, `{"type":"SUBAGENT_FINISHED","subagentRunId":"s1"}`),
		want:   []string{"'/description': optional field is null"},
	},
	{
		name:   "unknown subagent outcome",
		events: run(`{"type":"SUBAGENT_STARTED","subagentRunId":"s1","name":"a"}`, `{"type":"SUBAGENT_FINISHED","subagentRunId":"s1","outcome":{"type":"done"}}`),
		want:   []string{`'/outcome': unrecognised type "done"`},
	},
	{
		name:   "a tagged continuation of the parent's message",
		events: run(`{"type":"TEXT_MESSAGE_START","messageId":"m1"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"x","subagentRunId":"s1"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`),
		want:   []string{"event 2 (TEXT_MESSAGE_CONTENT): Cannot send 'TEXT_MESSAGE_CONTENT': subagentRunId 's1' does not match the message 'm1' opener's subagent '(the parent agent)'."},
	},
	{
		name:   "a message reopened by another subagent",
		events: run(`{"type":"TEXT_MESSAGE_START","messageId":"m1","subagentRunId":"s1"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`, `{"type":"TEXT_MESSAGE_START","messageId":"m1","subagentRunId":"s2"}`),
		want:   []string{"event 3 (TEXT_MESSAGE_START): Cannot send 'TEXT_MESSAGE_START': subagentRunId 's2' does not match the message 'm1' opener's subagent 's1'."},
	},
	{
		name:   "a tool call tagged unlike its parent message",
		events: run(`{"type":"TEXT_MESSAGE_START","messageId":"m1"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`, `{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f","parentMessageId":"m1","subagentRunId":"s1"}`),
		want:   []string{"event 3 (TOOL_CALL_START): Cannot send 'TOOL_CALL_START': subagentRunId 's1' does not match its parent message 'm1' owner '(the parent agent)'. A tool call belongs to the message that carries it."},
	},
	{
		name: "a tool call reopened under a message of another owner",
		events: run(
			`{"type":"TEXT_MESSAGE_START","messageId":"m1","subagentRunId":"s1"}`,
			`{"type":"TEXT_MESSAGE_END","messageId":"m1"}`,
			`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f"}`,
			`{"type":"TOOL_CALL_END","toolCallId":"c1"}`,
			`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f","parentMessageId":"m1"}`,
		),
		want: []string{"event 5 (TOOL_CALL_START): Cannot send 'TOOL_CALL_START': tool call 'c1' is owned by '(the parent agent)' but its parent message 'm1' is owned by 's1'."},
	},
	{
		name:   "tool args tagged unlike the call",
		events: run(`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f","subagentRunId":"s1"}`, `{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{}","subagentRunId":"s2"}`, `{"type":"TOOL_CALL_END","toolCallId":"c1"}`),
		want:   []string{"event 2 (TOOL_CALL_ARGS): Cannot send 'TOOL_CALL_ARGS': subagentRunId 's2' does not match the tool call 'c1' opener's subagent 's1'."},
	},
	{
		name:   "reasoning continued by another subagent",
		events: run(`{"type":"REASONING_START","messageId":"r1","subagentRunId":"s1"}`, `{"type":"REASONING_END","messageId":"r1","subagentRunId":"s2"}`, `{"type":"REASONING_END","messageId":"r1"}`),
		want:   []string{"event 2 (REASONING_END): Cannot send 'REASONING_END': subagentRunId 's2' does not match the reasoning message 'r1' opener's subagent 's1'."},
	},
	{
		name:   "an encrypted value for another subagent's tool call",
		events: run(`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f","subagentRunId":"s1"}`, `{"type":"TOOL_CALL_END","toolCallId":"c1"}`, `{"type":"REASONING_ENCRYPTED_VALUE","subtype":"tool-call","entityId":"c1","encryptedValue":"e","subagentRunId":"s2"}`),
		want:   []string{"event 3 (REASONING_ENCRYPTED_VALUE): Cannot send 'REASONING_ENCRYPTED_VALUE': subagentRunId 's2' does not match the tool call 'c1' opener's subagent 's1'."},
	},
	{
		name:   "an activity patched by another subagent",
		events: run(`{"type":"ACTIVITY_SNAPSHOT","messageId":"a1","activityType":"plan","content":{},"subagentRunId":"s1"}`, `{"type":"ACTIVITY_DELTA","messageId":"a1","activityType":"plan","patch":[],"subagentRunId":"s2"}`),
		want:   []string{"event 2 (ACTIVITY_DELTA): Cannot send 'ACTIVITY_DELTA': subagentRunId 's2' does not match the activity 'a1' opener's subagent 's1'."},
	},
	{
		name:   "a snapshot's owners bind later events",
		events: run(`{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"m1","role":"assistant","subagentRunId":"s1","content":"x"}]}`, `{"type":"TEXT_MESSAGE_START","messageId":"m1","subagentRunId":"s2"}`),
		want:   []string{"event 2 (TEXT_MESSAGE_START): Cannot send 'TEXT_MESSAGE_START': subagentRunId 's2' does not match the message 'm1' opener's subagent 's1'."},
	},
}
