package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var english = message.NewPrinter(language.English)

// Schema is a compiled JSON Schema for tool arguments.
type Schema struct {
	s    *jsonschema.Schema
	fast *fastSchema
}

// noLoader refuses every external $ref: schemas come from chain files and
// MCP servers, and compiling one must never read a local file or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema references are not allowed (%s)", url)
}

// CompileSchema compiles a JSON Schema document.
func CompileSchema(doc []byte) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("tool-parameters.json", v); err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %w", err)
	}
	s, err := c.Compile("tool-parameters.json")
	if err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %s", compact(err.Error()))
	}
	return &Schema{s: s, fast: compileFast(doc)}, nil
}

// Validate checks args against the schema. Errors are of kind ErrInvalidArgs
// and say what is wrong in a way the model can act on.
func (s *Schema) Validate(args []byte) error {
	if s == nil || s.s == nil {
		return nil
	}
	if s.fast != nil && json.Valid(args) && s.fast.valid(args) {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return Wrap(ErrInvalidArgs, err, "arguments are not valid JSON")
	}
	if _, ok := v.(map[string]any); !ok {
		return Errorf(ErrInvalidArgs, "arguments must be a JSON object")
	}
	if err := s.s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return Errorf(ErrInvalidArgs, "%s", describe(ve))
		}
		return Wrap(ErrInvalidArgs, err, "")
	}
	return nil
}

// describe flattens a validation error tree into "at /x: message" lines.
func describe(ve *jsonschema.ValidationError) string {
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			lines = append(lines, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(english)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(lines) > 5 {
		lines = append(lines[:5], fmt.Sprintf("(and %d more)", len(lines)-5))
	}
	return strings.Join(lines, "; ")
}

func compact(s string) string { return strings.Join(strings.Fields(s), " ") }
