package aguicheck

// The nested types of AG-UI 1.0 events, transcribed from @ag-ui/core@1.0.0's
// generated schemas.ts: messages, content parts, JSON Patch, the run input
// echoed by RUN_STARTED, outcomes, interrupts and token usage.

// fields merges field tables, later ones winning, so shared groups (the base
// fields of an event, of a message) are written once.
func fields(groups ...map[string]field) map[string]field {
	merged := map[string]field{}
	for _, g := range groups {
		for k, f := range g {
			merged[k] = f
		}
	}
	return merged
}

var (
	// optionalPayload is z.any().refine(v => v !== null).optional(): any
	// value, but never null (null is caught by object.validateFields).
	optionalPayload = opt(anyJSON{})
	metadataField   = opt(jsonObject{})
)

var partSource = &union{discriminator: "type", options: map[string]*object{
	"data": {fields: map[string]field{"type": req(enum{"data"}), "value": req(str{}), "mimeType": req(str{})}},
	"url":  {fields: map[string]field{"type": req(enum{"url"}), "value": req(str{}), "mimeType": opt(str{})}},
	"file": {fields: map[string]field{"type": req(enum{"file"}), "value": req(str{}), "provider": opt(str{}), "mimeType": opt(str{})}},
}}

func mediaPart(kind string) *object {
	return &object{fields: map[string]field{
		"type":     req(enum{kind}),
		"id":       opt(str{}),
		"source":   req(partSource),
		"metadata": optionalPayload, // z.any there, not the metadata object check
	}}
}

var contentPart = &union{discriminator: "type", options: map[string]*object{
	"text": {fields: map[string]field{
		"type": req(enum{"text"}), "id": opt(str{}), "text": req(str{}), "metadata": optionalPayload,
	}},
	"image":    mediaPart("image"),
	"audio":    mediaPart("audio"),
	"video":    mediaPart("video"),
	"document": mediaPart("document"),
}}

var messageContent = stringOrArray{elem: contentPart}

var toolCall = &object{fields: map[string]field{
	"id":   req(str{}),
	"type": req(enum{"function"}),
	"function": req(&object{fields: map[string]field{
		"name": req(str{}), "arguments": req(str{}),
	}}),
	"encryptedValue": opt(str{}),
	"metadata":       metadataField,
}}

// messageBase is what developer, system, assistant and user messages share.
var messageBase = map[string]field{
	"subagentRunId":  opt(str{}),
	"id":             req(str{}),
	"name":           opt(str{}),
	"encryptedValue": opt(str{}),
	"metadata":       metadataField,
}

func role(name string) map[string]field { return map[string]field{"role": req(enum{name})} }

var message = &union{discriminator: "role", options: map[string]*object{
	"developer": {fields: fields(messageBase, role("developer"), map[string]field{"content": req(str{})})},
	"system":    {fields: fields(messageBase, role("system"), map[string]field{"content": req(str{})})},
	"assistant": {fields: fields(messageBase, role("assistant"), map[string]field{
		"content": opt(str{}), "toolCalls": opt(array{elem: toolCall}),
	})},
	"user": {fields: fields(messageBase, role("user"), map[string]field{"content": req(messageContent)})},
	"tool": {fields: fields(role("tool"), map[string]field{
		"subagentRunId":  opt(str{}),
		"id":             req(str{}),
		"content":        req(messageContent),
		"toolCallId":     req(str{}),
		"error":          opt(str{}),
		"encryptedValue": opt(str{}),
		"metadata":       metadataField,
	})},
	"activity": {fields: fields(role("activity"), map[string]field{
		"subagentRunId": opt(str{}),
		"id":            req(str{}),
		"activityType":  req(str{}),
		"content":       req(jsonObject{}),
		"metadata":      metadataField,
	})},
	"reasoning": {fields: fields(role("reasoning"), map[string]field{
		"subagentRunId":  opt(str{}),
		"id":             req(str{}),
		"content":        req(str{}),
		"encryptedValue": opt(str{}),
		"metadata":       metadataField,
	})},
}}

// patchOp builds one RFC 6902 operation. They are the only objects the spec
// leaves open: RFC 6902 says unknown members are ignored, so they are legal.
func patchOp(op string, members ...string) *object {
	f := map[string]field{"op": req(enum{op}), "path": req(jsonPointer{})}
	for _, m := range members {
		switch m {
		case "from":
			f["from"] = req(jsonPointer{})
		case "value":
			// Required, yet null is a value: z.any().refine(v => v !== undefined).
			f["value"] = field{shape: anyJSON{}, required: true, nullable: true}
		}
	}
	return &object{fields: f, open: true}
}

var jsonPatch = array{elem: &union{discriminator: "op", options: map[string]*object{
	"add":     patchOp("add", "value"),
	"remove":  patchOp("remove"),
	"replace": patchOp("replace", "value"),
	"move":    patchOp("move", "from"),
	"copy":    patchOp("copy", "from"),
	"test":    patchOp("test", "value"),
}}}

var runAgentInput = &object{fields: map[string]field{
	"threadId":        req(str{}),
	"runId":           req(str{}),
	"protocolVersion": opt(str{}),
	"parentRunId":     opt(str{}),
	// The one optional field whose schema is .nullable(): null means absent.
	"state":    {shape: anyJSON{}, nullable: true},
	"messages": req(array{elem: message}),
	"tools": opt(array{elem: &object{fields: map[string]field{
		"name": req(str{}), "description": req(str{}), "parameters": optionalPayload, "metadata": metadataField,
	}}}),
	"context": opt(array{elem: &object{fields: map[string]field{
		"description": req(str{}), "value": req(str{}),
	}}}),
	"forwardedProps": optionalPayload,
	"resume": opt(array{elem: &object{fields: map[string]field{
		"interruptId": req(str{}),
		"status":      req(enum{"resolved", "cancelled"}),
		"payload":     optionalPayload,
		"metadata":    metadataField,
	}}}),
}}

var interrupt = &object{fields: map[string]field{
	"subagentRunId":  opt(str{}),
	"id":             req(str{}),
	"reason":         req(str{}),
	"message":        opt(str{}),
	"toolCallId":     opt(str{}),
	"responseSchema": opt(jsonObject{}),
	"expiresAt":      opt(str{}),
	"metadata":       metadataField,
}}

var runFinishedOutcome = &union{discriminator: "type", options: map[string]*object{
	"success": {fields: map[string]field{
		"type": req(enum{"success"}), "pendingToolCallIds": opt(array{elem: str{}}),
	}},
	"interrupt": {fields: map[string]field{
		"type": req(enum{"interrupt"}), "interrupts": req(array{elem: interrupt, min: 1}),
	}},
	"cancelled": {fields: map[string]field{"type": req(enum{"cancelled"})}},
}}

var subagentFinishedOutcome = &union{discriminator: "type", options: map[string]*object{
	"success": {fields: map[string]field{"type": req(enum{"success"})}},
	"suspended": {fields: map[string]field{
		"type": req(enum{"suspended"}), "interruptIds": opt(array{elem: str{}}),
	}},
}}

var tokenUsage = array{elem: &object{fields: map[string]field{
	"provider":              opt(str{}),
	"model":                 opt(str{}),
	"inputTokens":           opt(safeInt{nonNegative: true}),
	"outputTokens":          opt(safeInt{nonNegative: true}),
	"totalTokens":           opt(safeInt{nonNegative: true}),
	"reasoningTokens":       opt(safeInt{nonNegative: true}),
	"cachedInputTokens":     opt(safeInt{nonNegative: true}),
	"cacheWriteInputTokens": opt(safeInt{nonNegative: true}),
}}}
