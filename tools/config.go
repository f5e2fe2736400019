package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// ConfigError is a configuration mistake, located by its JSON path, for
// example `tools[2].config.timeout`.
type ConfigError struct {
	Path string
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// ErrConfig is matched by every *ConfigError (errors.Is(err, ErrConfig)).
var ErrConfig = errors.New("invalid configuration")

// Is makes errors.Is(err, ErrConfig) true for configuration errors.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// Prefix returns a copy of err with its path placed under prefix. Other
// errors are wrapped into a *ConfigError at prefix.
func Prefix(prefix string, err error) error {
	if err == nil {
		return nil
	}
	var ce *ConfigError
	if errors.As(err, &ce) {
		p := prefix
		switch {
		case ce.Path == "":
		case strings.HasPrefix(ce.Path, "["):
			p += ce.Path
		default:
			p += "." + ce.Path
		}
		return &ConfigError{Path: p, Msg: ce.Msg}
	}
	return &ConfigError{Path: prefix, Msg: err.Error()}
}

// DecodeConfig decodes a tool's config object into dst strictly: unknown
// fields and wrong types are errors naming the field. An empty or null raw
// value leaves dst (its defaults) unchanged. Errors are *ConfigError with
// paths relative to the config object.
func DecodeConfig(raw json.RawMessage, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return &ConfigError{Msg: "config must be a JSON object"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return &ConfigError{Msg: "trailing data after the config object"}
	}
	return nil
}

func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &ConfigError{Path: te.Field, Msg: fmt.Sprintf("cannot use %s as %s", te.Value, typeName(te.Type))}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &ConfigError{Msg: fmt.Sprintf("malformed JSON at offset %d: %v", se.Offset, se)}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return &ConfigError{Path: strings.Trim(name, `"`), Msg: "unknown field"}
	}
	// Errors returned by custom UnmarshalJSON methods (Duration, ...) carry
	// no path from encoding/json; report them at the object level.
	return &ConfigError{Msg: strings.TrimPrefix(msg, "json: ")}
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		if t == reflect.TypeFor[Duration]() {
			return "a duration"
		}
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if t == reflect.TypeFor[Duration]() {
			return "a duration (milliseconds or \"30s\")"
		}
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return t.String()
}

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
