package tools

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ruleagent/ruleagent/configerr"
)

// ConfigError is a configuration mistake, located by its JSON path, for
// example `tools[2].config.timeout`. It is configerr.Error, the one error
// type of every configuration parser.
type ConfigError = configerr.Error

// ErrConfig is matched by every *ConfigError (errors.Is(err, ErrConfig)).
var ErrConfig = configerr.ErrConfig

// Prefix returns a copy of err with its path placed under prefix. Other
// errors are wrapped into a *ConfigError at prefix.
func Prefix(prefix string, err error) error { return configerr.Prefix(prefix, err) }

// DecodeConfig decodes a tool's config object into dst strictly: unknown
// fields and wrong types are errors naming the field. An empty or null raw
// value leaves dst (its defaults) unchanged. Errors are *ConfigError with
// paths relative to the config object.
func DecodeConfig(raw json.RawMessage, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] != '{' && string(raw) != "null" {
		return &ConfigError{Msg: "config must be a JSON object"}
	}
	return configerr.Decode(raw, dst)
}

// ConfigTypeName describes a Duration's JSON in configuration errors.
func (Duration) ConfigTypeName() string { return `a duration (milliseconds or "30s")` }

// SchemaFor infers the JSON Schema of a config struct from its Go type and
// `json`/`jsonschema` tags, and records the values of defaults as each
// property's "default". No property is required: every config field has a
// default.
func SchemaFor[T any](defaults T) json.RawMessage {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[Duration](): {
			Types:       []string{"integer", "string"},
			Description: "milliseconds, or a duration such as \"30s\"",
		},
	}})
	if err != nil {
		panic(err) // a programming error in a built-in config type
	}
	s.Required = nil
	if b, err := json.Marshal(defaults); err == nil {
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) == nil {
			for name, p := range s.Properties {
				if v, ok := m[name]; ok && !isZeroJSON(v) {
					p.Default = v
				}
			}
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

func isZeroJSON(v json.RawMessage) bool {
	switch string(v) {
	case "", "null", `""`, "0", "false", "[]", "{}", `"0s"`:
		return true
	}
	return false
}
