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

// DecodeArgs decodes the model's arguments into dst strictly. Unknown
// fields, wrong types and trailing data are tools.ErrInvalidArgs errors that
// name the argument and list the valid ones, so the model can fix its call.
// Empty or null arguments decode as an empty object.
func DecodeArgs(raw json.RawMessage, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return Errorf(ErrInvalidArgs, "arguments must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return argsError(err, dst)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Errorf(ErrInvalidArgs, "trailing data after the arguments object")
	}
	return nil
}

func argsError(err error, dst any) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return Errorf(ErrInvalidArgs, "argument %q: cannot use a JSON %s here; want %s", te.Field, te.Value, argKindName(te.Type))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return Wrap(ErrInvalidArgs, se, "malformed JSON arguments at offset %d", se.Offset)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return Errorf(ErrInvalidArgs, "unknown argument %s; valid arguments are: %s", name, strings.Join(fieldNames(dst), ", "))
	}
	return Wrap(ErrInvalidArgs, err, "bad arguments")
}

func argKindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Slice:
		return "a list"
	}
	return t.String()
}

// fieldNames lists the JSON names of the struct dst points to.
func fieldNames(dst any) []string {
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var names []string
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// ArgsSchema infers the JSON Schema of an arguments struct from its Go type
// and `jsonschema` tags, so the schema the model sees and the struct
// DecodeArgs fills can never disagree. enums restricts string properties to
// listed values. Fields without omitempty are required.
func ArgsSchema[T any](enums map[string][]string) json.RawMessage {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err) // a programming error in a built-in args type
	}
	for name, values := range enums {
		p, ok := s.Properties[name]
		if !ok {
			panic(fmt.Sprintf("tools: enum for unknown property %q", name))
		}
		for _, v := range values {
			p.Enum = append(p.Enum, v)
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}
