package tools

import "encoding/json"

// TypeDoc describes one tool type of the tools array, for listings and the
// editor.
type TypeDoc struct {
	Type        string          `json:"type"`
	Description string          `json:"description"`
	Fields      json.RawMessage `json:"fields"`
}

// TypeDocs describes the four tool types and the fields each takes.
func TypeDocs() []TypeDoc {
	return []TypeDoc{
		{TypeBuiltin, "A tool built into ruleagent (read, write, edit, bash, grep, glob, skill, ...), configured by config.",
			json.RawMessage(`{"type":"object","required":["type","name"],"properties":{` +
				`"name":{"type":"string","description":"The builtin's name; also the name the model sees."},` +
				`"description":{"type":"string","description":"Replaces the builtin's description for this agent."},` +
				`"timeout":{"type":["integer","string"],"description":"Per-call timeout (ms or \"30s\"); the builtin's own limits still apply."},` +
				`"config":{"type":"object","description":"The builtin's configuration (see its config schema)."}}}`)},
		{TypeRuleChain, "Another rule chain as a tool: the model's arguments are its message data, its end message data is the result.",
			json.RawMessage(`{"type":"object","required":["type","name","targetId"],"properties":{` +
				`"name":{"type":"string","description":"Function name the model sees."},` +
				`"description":{"type":"string","description":"When the model should use it."},` +
				`"targetId":{"type":"string","description":"Id of the chain to run."},` +
				`"parameters":{"type":["object","string"],"description":"JSON Schema of the arguments (object, or a string holding one)."},` +
				`"timeout":{"type":["integer","string"],"description":"Per-call timeout, default 120s; the chain is cancelled when it passes."},` +
				`"bind":{"type":"object","additionalProperties":{"type":"string"},"description":"Parameters filled from metadata.<key>, vars.<key>, global.<key> or const:<value> instead of by the model; they are hidden from the model."}}}`)},
		{TypeAgent, "Another agent chain as a sub-agent: its name, description and parameters default to the target chain's.",
			json.RawMessage(`{"type":"object","required":["type","targetId"],"properties":{` +
				`"targetId":{"type":"string","description":"Id of the agent chain."},` +
				`"name":{"type":"string","description":"Defaults to the chain's name, made a valid function name."},` +
				`"description":{"type":"string","description":"Defaults to the chain's additionalInfo.description."},` +
				`"parameters":{"type":["object","string"],"description":"Defaults to the chain's additionalInfo.inputSchema, or {message} / OpenAI messages."},` +
				`"timeout":{"type":["integer","string"],"description":"Per-call timeout, default 120s."},` +
				`"bind":{"type":"object","additionalProperties":{"type":"string"},"description":"As for rulechain."}}}`)},
		{TypeMCP, "The tools of an MCP server: in-process (\"self\"), streamable HTTP / SSE, or stdio.",
			json.RawMessage(`{"type":"object","required":["type","config"],"properties":{` +
				`"name":{"type":"string","description":"Prefix of the tool names the model sees (<name>__<tool>)."},` +
				`"timeout":{"type":["integer","string"],"description":"Per-call timeout."},` +
				`"config":{"type":"object","description":"server (\"self\", an http(s) URL, or \"stdio:<command> <args>\"), tools (names or globs), headers, env, timeout."}}}`)},
	}
}
