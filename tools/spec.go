package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Tool types of the tools array.
const (
	TypeBuiltin   = "builtin"
	TypeRuleChain = "rulechain"
	TypeAgent     = "agent"
	TypeMCP       = "mcp"
)

// DefaultChainTimeout bounds a rulechain or agent tool when its spec gives
// no timeout.
const DefaultChainTimeout = 120 * time.Second

// Spec is one entry of an agent node's `tools` array.
type Spec struct {
	// Type is builtin, rulechain, agent or mcp.
	Type string `json:"type"`
	// Name is the builtin's name (builtin), or the function name the model
	// sees (rulechain, agent; for mcp, the prefix of the server's tools).
	Name string `json:"name,omitempty"`
	// Description tells the model when to use the tool.
	Description string `json:"description,omitempty"`
	// TargetID is the chain a rulechain or agent tool runs.
	TargetID string `json:"targetId,omitempty"`
	// Parameters is the JSON Schema of the arguments, given as an object
	// or as a string holding one. It is normalised to an object.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Timeout bounds each call (integer ms or "30s").
	Timeout Duration `json:"timeout,omitempty"`
	// Config configures a builtin or mcp tool.
	Config json.RawMessage `json:"config,omitempty"`
	// Bind fills parameters from somewhere other than the model:
	// "metadata.<key>", "vars.<key>", "global.<key>" or "const:<value>".
	Bind map[string]string `json:"bind,omitempty"`
	// ResponseSchema makes the tool a form a person answers: each call
	// pauses the run for the answer (see approvals), which becomes the
	// result; the tool itself does not run.
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
}

// ParseSpecs parses a tools array strictly. Every error is a *ConfigError
// whose path starts at `tools`, for example `tools[2].targetId`.
func ParseSpecs(raw json.RawMessage) ([]Spec, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &ConfigError{Path: "tools", Msg: "must be a JSON array of tool objects"}
	}
	specs := make([]Spec, 0, len(items))
	for i, item := range items {
		s, err := parseSpec(item)
		if err != nil {
			return nil, Prefix(fmt.Sprintf("tools[%d]", i), err)
		}
		specs = append(specs, s)
	}
	return specs, nil
}

func parseSpec(raw json.RawMessage) (Spec, error) {
	var s Spec
	if err := DecodeConfig(raw, &s); err != nil {
		return s, err
	}
	if len(bytes.TrimSpace(raw)) == 0 || raw[0] != '{' {
		return s, &ConfigError{Msg: "must be a tool object"}
	}
	var err error
	if s.Parameters, err = normaliseSchema(s.Parameters); err != nil {
		return s, &ConfigError{Path: "parameters", Msg: err.Error(), Err: err}
	}
	if len(s.Config) > 0 && string(bytes.TrimSpace(s.Config)) == "null" {
		s.Config = nil
	}
	if len(s.Config) > 0 && bytes.TrimSpace(s.Config)[0] != '{' {
		return s, &ConfigError{Path: "config", Msg: "must be an object"}
	}
	switch s.Type {
	case TypeBuiltin:
		if s.Name == "" {
			return s, &ConfigError{Path: "name", Msg: "a builtin tool needs the builtin's name"}
		}
		if s.TargetID != "" {
			return s, &ConfigError{Path: "targetId", Msg: "only rulechain and agent tools have a target"}
		}
		if len(s.Bind) > 0 {
			return s, &ConfigError{Path: "bind", Msg: "only rulechain and agent tools bind parameters"}
		}
		if len(s.Parameters) > 0 {
			return s, &ConfigError{Path: "parameters", Msg: "a builtin defines its own parameters"}
		}
	case TypeRuleChain, TypeAgent:
		if s.TargetID == "" {
			return s, &ConfigError{Path: "targetId", Msg: "a " + s.Type + " tool needs the id of the chain it runs"}
		}
		if s.Type == TypeRuleChain && s.Name == "" {
			return s, &ConfigError{Path: "name", Msg: "a rulechain tool needs a name"}
		}
		if s.Name != "" && !NamePattern.MatchString(s.Name) {
			return s, &ConfigError{Path: "name", Msg: fmt.Sprintf("%q is not a valid tool name (letters, digits, _ and -, at most 64)", s.Name)}
		}
		if len(s.Config) > 0 {
			return s, &ConfigError{Path: "config", Msg: "a " + s.Type + " tool takes no config"}
		}
		if err := checkBindings(s.Bind, s.Parameters); err != nil {
			return s, err
		}
	case TypeMCP:
		if len(s.Config) == 0 {
			return s, &ConfigError{Path: "config", Msg: `an mcp tool needs a config with "server"`}
		}
		if s.Name != "" && !NamePattern.MatchString(s.Name) {
			return s, &ConfigError{Path: "name", Msg: fmt.Sprintf("%q is not a valid prefix (letters, digits, _ and -)", s.Name)}
		}
		if s.TargetID != "" || len(s.Bind) > 0 || len(s.Parameters) > 0 {
			return s, &ConfigError{Msg: "an mcp tool takes its tools, names and schemas from the server: use config"}
		}
	case "":
		return s, &ConfigError{Path: "type", Msg: "missing; one of builtin, rulechain, agent, mcp"}
	default:
		return s, &ConfigError{Path: "type", Msg: fmt.Sprintf("unknown tool type %q; one of builtin, rulechain, agent, mcp", s.Type)}
	}
	return s, nil
}

// normaliseSchema accepts a schema object or a string holding one, and
// returns the object, compacted. It checks that it is a valid JSON Schema
// describing an object.
func normaliseSchema(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || string(raw) == `""` {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		raw = bytes.TrimSpace([]byte(s))
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("must be a JSON Schema object (or a string holding one)")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := CompileSchema(buf.Bytes()); err != nil {
		return nil, err
	}
	var probe struct {
		Type any `json:"type"`
	}
	_ = json.Unmarshal(buf.Bytes(), &probe)
	if t, ok := probe.Type.(string); ok && t != "object" {
		return nil, fmt.Errorf(`the arguments must be an object: "type" is %q`, t)
	}
	return buf.Bytes(), nil
}

// BindSource is where a bound parameter's value comes from.
type BindSource struct {
	// Kind is metadata, vars, global or const.
	Kind string
	// Key is the metadata, vars or global key; for const, the value.
	Key string
}

// ParseBind parses a binding such as "metadata.userId" or "const:acme".
func ParseBind(s string) (BindSource, error) {
	if v, ok := strings.CutPrefix(s, "const:"); ok {
		return BindSource{Kind: "const", Key: v}, nil
	}
	kind, key, ok := strings.Cut(s, ".")
	if !ok || key == "" {
		return BindSource{}, fmt.Errorf("%q: want metadata.<key>, vars.<key>, global.<key> or const:<value>", s)
	}
	switch kind {
	case "metadata", "vars", "global":
		return BindSource{Kind: kind, Key: key}, nil
	}
	return BindSource{}, fmt.Errorf("%q: unknown source %q; want metadata, vars, global or const", s, kind)
}

func checkBindings(bind map[string]string, schema json.RawMessage) error {
	if len(bind) == 0 {
		return nil
	}
	var props struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &props)
	for param, src := range bind {
		if _, err := ParseBind(src); err != nil {
			return &ConfigError{Path: "bind." + param, Msg: err.Error(), Err: err}
		}
		if len(schema) > 0 {
			if _, ok := props.Properties[param]; !ok {
				return &ConfigError{Path: "bind." + param, Msg: "not a property of the tool's parameters"}
			}
		}
	}
	return nil
}
