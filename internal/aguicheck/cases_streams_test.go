package aguicheck

// Cases for the open/close discipline of text messages, tool calls, reasoning
// spans and messages, and steps, and for what RUN_FINISHED requires closed.
var streamCases = []ruleCase{
	{
		name: "interleaved text messages, and an id reopened after its end",
		events: run(
			`{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}`,
			`{"type":"TEXT_MESSAGE_START","messageId":"m2"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":""}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m2","delta":"b"}`,
			`{"type":"TEXT_MESSAGE_END","messageId":"m2"}`,
			`{"type":"TEXT_MESSAGE_END","messageId":"m1"}`,
			`{"type":"TEXT_MESSAGE_START","messageId":"m1"}`,
			`{"type":"TEXT_MESSAGE_END","messageId":"m1"}`,
		),
	},
	{
		name:   "text message already in progress",
		events: run(`{"type":"TEXT_MESSAGE_START","messageId":"m1"}`, `{"type":"TEXT_MESSAGE_START","messageId":"m1"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`),
		want:   []string{"event 2 (TEXT_MESSAGE_START): Cannot send 'TEXT_MESSAGE_START' event: A text message with ID 'm1' is already in progress. Complete it with 'TEXT_MESSAGE_END' first."},
	},
	{
		name:   "text content without a start",
		events: run(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"x"}`),
		want:   []string{"event 1 (TEXT_MESSAGE_CONTENT): Cannot send 'TEXT_MESSAGE_CONTENT' event: No active text message found with ID 'm1'. Start a text message with 'TEXT_MESSAGE_START' first."},
	},
	{
		name:   "text end without a start",
		events: run(`{"type":"TEXT_MESSAGE_START","messageId":"m1"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`),
		want:   []string{"event 3 (TEXT_MESSAGE_END): Cannot send 'TEXT_MESSAGE_END' event: No active text message found with ID 'm1'. A 'TEXT_MESSAGE_START' event must be sent first."},
	},
	{
		name:   "run finished with a text message open",
		events: run(`{"type":"TEXT_MESSAGE_START","messageId":"m1"}`, `{"type":"TEXT_MESSAGE_START","messageId":"m2"}`),
		want:   []string{"event 3 (RUN_FINISHED): Cannot send 'RUN_FINISHED' while text messages are still active: m1, m2"},
	},
	{
		name: "tool call with args, end and result; results are not checked against calls",
		events: run(
			`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"search"}`,
			`{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{\"q\":"}`,
			`{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"1}"}`,
			`{"type":"TOOL_CALL_END","toolCallId":"c1"}`,
			`{"type":"TOOL_CALL_RESULT","messageId":"tr1","toolCallId":"c1","content":"ok"}`,
			`{"type":"TOOL_CALL_RESULT","messageId":"tr2","toolCallId":"never-started","content":"ok"}`,
		),
	},
	{
		name:   "tool call already in progress",
		events: run(`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f"}`, `{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f"}`, `{"type":"TOOL_CALL_END","toolCallId":"c1"}`),
		want:   []string{"event 2 (TOOL_CALL_START): Cannot send 'TOOL_CALL_START' event: A tool call with ID 'c1' is already in progress. Complete it with 'TOOL_CALL_END' first."},
	},
	{
		name:   "tool args without a start",
		events: run(`{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{}"}`),
		want:   []string{"event 1 (TOOL_CALL_ARGS): Cannot send 'TOOL_CALL_ARGS' event: No active tool call found with ID 'c1'. Start a tool call with 'TOOL_CALL_START' first."},
	},
	{
		name:   "tool end without a start",
		events: run(`{"type":"TOOL_CALL_END","toolCallId":"c1"}`),
		want:   []string{"event 1 (TOOL_CALL_END): Cannot send 'TOOL_CALL_END' event: No active tool call found with ID 'c1'. A 'TOOL_CALL_START' event must be sent first."},
	},
	{
		name:   "run finished with a tool call open",
		events: run(`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f"}`),
		want:   []string{"event 2 (RUN_FINISHED): Cannot send 'RUN_FINISHED' while tool calls are still active: c1"},
	},
	{
		name: "reasoning span and message sharing an id",
		events: run(
			`{"type":"REASONING_START","messageId":"r1"}`,
			`{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"reasoning"}`,
			`{"type":"REASONING_MESSAGE_CONTENT","messageId":"r1","delta":"think"}`,
			`{"type":"REASONING_MESSAGE_END","messageId":"r1"}`,
			`{"type":"REASONING_ENCRYPTED_VALUE","subtype":"message","entityId":"r1","encryptedValue":"xyz"}`,
			`{"type":"REASONING_END","messageId":"r1"}`,
		),
	},
	{
		name:   "reasoning span already in progress",
		events: run(`{"type":"REASONING_START","messageId":"r1"}`, `{"type":"REASONING_START","messageId":"r1"}`, `{"type":"REASONING_END","messageId":"r1"}`),
		want:   []string{"event 2 (REASONING_START): Cannot send 'REASONING_START' event: A reasoning span with ID 'r1' is already in progress. Complete it with 'REASONING_END' first."},
	},
	{
		name:   "reasoning message already in progress",
		events: run(`{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"reasoning"}`, `{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"reasoning"}`, `{"type":"REASONING_MESSAGE_END","messageId":"r1"}`),
		want:   []string{"event 2 (REASONING_MESSAGE_START): Cannot send 'REASONING_MESSAGE_START' event: A reasoning message with ID 'r1' is already in progress."},
	},
	{
		name:   "reasoning end without a span",
		events: run(`{"type":"REASONING_END","messageId":"r1"}`),
		want:   []string{"event 1 (REASONING_END): Cannot send 'REASONING_END' event: No active reasoning span found with ID 'r1'. A 'REASONING_START' event must be sent first."},
	},
	{
		name:   "reasoning content without a message",
		events: run(`{"type":"REASONING_START","messageId":"r1"}`, `{"type":"REASONING_MESSAGE_CONTENT","messageId":"r1","delta":"x"}`, `{"type":"REASONING_END","messageId":"r1"}`),
		want:   []string{"event 2 (REASONING_MESSAGE_CONTENT): Cannot send 'REASONING_MESSAGE_CONTENT' event: No active reasoning message found with ID 'r1'. Start a reasoning message with 'REASONING_MESSAGE_START' first."},
	},
	{
		name:   "run finished with a reasoning message open",
		events: run(`{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"reasoning"}`),
		want:   []string{"Cannot send 'RUN_FINISHED' while reasoning messages are still active: r1"},
	},
	{
		name:   "run finished with a reasoning span open",
		events: run(`{"type":"REASONING_START","messageId":"r1"}`),
		want:   []string{"Cannot send 'RUN_FINISHED' while reasoning spans are still active: r1"},
	},
	{
		name: "nested steps, and a subagent's step named like its parent's",
		events: run(
			`{"type":"STEP_STARTED","stepName":"tools"}`,
			`{"type":"STEP_STARTED","stepName":"inner"}`,
			`{"type":"STEP_STARTED","stepName":"tools","subagentRunId":"s1"}`,
			`{"type":"STEP_FINISHED","stepName":"tools","subagentRunId":"s1"}`,
			`{"type":"STEP_FINISHED","stepName":"inner"}`,
			`{"type":"STEP_FINISHED","stepName":"tools"}`,
		),
	},
	{
		name:   "step already active",
		events: run(`{"type":"STEP_STARTED","stepName":"s"}`, `{"type":"STEP_STARTED","stepName":"s"}`, `{"type":"STEP_FINISHED","stepName":"s"}`),
		want:   []string{`event 2 (STEP_STARTED): Step "s" is already active for 'STEP_STARTED'`},
	},
	{
		name:   "step finished but never started",
		events: run(`{"type":"STEP_FINISHED","stepName":"s"}`),
		want:   []string{`event 1 (STEP_FINISHED): Cannot send 'STEP_FINISHED' for step "s" that was not started`},
	},
	{
		name:   "step finished by another owner",
		events: run(`{"type":"STEP_STARTED","stepName":"s"}`, `{"type":"STEP_FINISHED","stepName":"s","subagentRunId":"s1"}`, `{"type":"STEP_FINISHED","stepName":"s"}`),
		want:   []string{`event 2 (STEP_FINISHED): Cannot send 'STEP_FINISHED' for step "s" attributed to subagent 's1': that step is open under the parent agent. A step must be finished by whoever started it.`},
	},
	{
		name:   "run finished with steps open",
		events: run(`{"type":"STEP_STARTED","stepName":"a"}`, `{"type":"STEP_STARTED","stepName":"b","subagentRunId":"s1"}`),
		want:   []string{"event 3 (RUN_FINISHED): Cannot send 'RUN_FINISHED' while steps are still active: a, b (subagent 's1')"},
	},
}
