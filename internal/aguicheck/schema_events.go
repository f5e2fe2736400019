package aguicheck

// The 31 AG-UI 1.0 event types and their fields, transcribed from
// @ag-ui/core@1.0.0's generated schemas.ts (EventSchema's members).

// baseFields are carried by every event. timestamp is a safe integer
// (milliseconds), never a float; rawEvent any non-null JSON; metadata an object.
var baseFields = map[string]field{
	"type":      req(str{}),
	"timestamp": opt(safeInt{}),
	"rawEvent":  optionalPayload,
	"metadata":  metadataField,
}

// attributable is the optional subagent tag. The run-scoped events
// (RUN_STARTED, RUN_FINISHED, RUN_ERROR) and MESSAGES_SNAPSHOT do not have it:
// there the client strips it as an unknown field.
var attributable = map[string]field{"subagentRunId": opt(str{})}

var textMessageRole = enum{"developer", "system", "assistant", "user"}

func event(groups ...map[string]field) *object { return &object{fields: fields(groups...)} }

// eventSchemas maps each event type to its schema.
var eventSchemas = map[string]*object{
	"TEXT_MESSAGE_START": event(baseFields, attributable, map[string]field{
		"messageId": req(str{}), "role": opt(textMessageRole), "name": opt(str{}),
	}),
	"TEXT_MESSAGE_CONTENT": event(baseFields, attributable, map[string]field{
		"messageId": req(str{}), "delta": req(str{}),
	}),
	"TEXT_MESSAGE_END": event(baseFields, attributable, map[string]field{"messageId": req(str{})}),
	"TEXT_MESSAGE_CHUNK": event(baseFields, attributable, map[string]field{
		"messageId": opt(str{}), "role": opt(textMessageRole), "delta": opt(str{}), "name": opt(str{}),
	}),

	"TOOL_CALL_START": event(baseFields, attributable, map[string]field{
		"toolCallId": req(str{}), "toolCallName": req(str{}), "parentMessageId": opt(str{}),
	}),
	"TOOL_CALL_ARGS": event(baseFields, attributable, map[string]field{
		"toolCallId": req(str{}), "delta": req(str{}),
	}),
	"TOOL_CALL_END": event(baseFields, attributable, map[string]field{"toolCallId": req(str{})}),
	"TOOL_CALL_CHUNK": event(baseFields, attributable, map[string]field{
		"toolCallId": opt(str{}), "toolCallName": opt(str{}), "parentMessageId": opt(str{}), "delta": opt(str{}),
	}),
	"TOOL_CALL_RESULT": event(baseFields, attributable, map[string]field{
		"messageId": req(str{}), "toolCallId": req(str{}), "content": req(messageContent), "role": opt(enum{"tool"}),
	}),

	"STATE_SNAPSHOT": event(baseFields, attributable, map[string]field{
		"snapshot": {shape: anyJSON{}, required: true, nullable: true},
	}),
	"STATE_DELTA":       event(baseFields, attributable, map[string]field{"delta": req(jsonPatch)}),
	"MESSAGES_SNAPSHOT": event(baseFields, map[string]field{"messages": req(array{elem: message})}),
	"ACTIVITY_SNAPSHOT": event(baseFields, attributable, map[string]field{
		"messageId": req(str{}), "activityType": req(str{}), "content": req(jsonObject{}), "replace": opt(boolean{}),
	}),
	"ACTIVITY_DELTA": event(baseFields, attributable, map[string]field{
		"messageId": req(str{}), "activityType": req(str{}), "patch": req(jsonPatch),
	}),
	"RAW": event(baseFields, attributable, map[string]field{
		"event": {shape: anyJSON{}, required: true, nullable: true}, "source": opt(str{}),
	}),
	"CUSTOM": event(baseFields, attributable, map[string]field{
		"name": req(str{}), "value": {shape: anyJSON{}, required: true, nullable: true},
	}),

	"RUN_STARTED": event(baseFields, map[string]field{
		"threadId": req(str{}), "runId": req(str{}), "protocolVersion": opt(str{}),
		"parentRunId": opt(str{}), "input": opt(runAgentInput),
	}),
	"RUN_FINISHED": event(baseFields, map[string]field{
		"threadId": req(str{}), "runId": req(str{}), "result": optionalPayload,
		"outcome": opt(runFinishedOutcome), "usage": opt(tokenUsage),
	}),
	"RUN_ERROR": event(baseFields, map[string]field{
		"message": req(str{}), "code": opt(str{}), "usage": opt(tokenUsage),
	}),

	"STEP_STARTED":  event(baseFields, attributable, map[string]field{"stepName": req(str{})}),
	"STEP_FINISHED": event(baseFields, attributable, map[string]field{"stepName": req(str{})}),

	"REASONING_START": event(baseFields, attributable, map[string]field{"messageId": req(str{})}),
	"REASONING_MESSAGE_START": event(baseFields, attributable, map[string]field{
		"messageId": req(str{}), "role": req(enum{"reasoning"}),
	}),
	"REASONING_MESSAGE_CONTENT": event(baseFields, attributable, map[string]field{
		"messageId": req(str{}), "delta": req(str{}),
	}),
	"REASONING_MESSAGE_END": event(baseFields, attributable, map[string]field{"messageId": req(str{})}),
	"REASONING_MESSAGE_CHUNK": event(baseFields, attributable, map[string]field{
		"messageId": opt(str{}), "delta": opt(str{}),
	}),
	"REASONING_END": event(baseFields, attributable, map[string]field{"messageId": req(str{})}),
	"REASONING_ENCRYPTED_VALUE": event(baseFields, attributable, map[string]field{
		"subtype": req(enum{"tool-call", "message"}), "entityId": req(str{}), "encryptedValue": req(str{}),
	}),

	// On the lifecycle events subagentRunId is the subagent's identity, so
	// it is required rather than an optional tag.
	"SUBAGENT_STARTED": event(baseFields, map[string]field{
		"subagentRunId": req(str{}), "name": req(str{}), "description": opt(str{}),
		"parentSubagentRunId": opt(str{}), "parentToolCallId": opt(str{}), "parentMessageId": opt(str{}),
	}),
	"SUBAGENT_FINISHED": event(baseFields, map[string]field{
		"subagentRunId": req(str{}), "result": optionalPayload, "outcome": opt(subagentFinishedOutcome),
	}),
	"SUBAGENT_ERROR": event(baseFields, map[string]field{
		"subagentRunId": req(str{}), "message": req(str{}), "code": opt(str{}),
	}),
}

// checkEventSchema validates one decoded event against its type's schema and
// returns the problems found, as enforceEvents would see them.
func checkEventSchema(ev map[string]any, typ string) []string {
	schema := eventSchemas[typ]
	c := &schemaCheck{}
	schema.validateFields(ev, "", c)
	return c.problems
}
