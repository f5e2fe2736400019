package tools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type testArgs struct {
	Path  string `json:"path" jsonschema:"the path"`
	Count int    `json:"count,omitempty" jsonschema:"how many"`
	Mode  string `json:"mode,omitempty" jsonschema:"which mode"`
}

func TestDecodeArgs(t *testing.T) {
	cases := []struct {
		raw     string
		wantErr string // substring of the message; "" means success
	}{
		{`{"path":"a","count":2}`, ""},
		{``, ""},
		{`null`, ""},
		{`{"path":"a","cnt":2}`, `unknown argument "cnt"; valid arguments are: path, count, mode`},
		{`{"count":"2"}`, `argument "count": cannot use a JSON string here; want an integer`},
		{`{"path":1}`, `argument "path": cannot use a JSON number here; want a string`},
		{`[1]`, "must be a JSON object"},
		{`{"path":"a"} {}`, "trailing data"},
		{`{"path":`, "bad arguments"},
	}
	for _, c := range cases {
		t.Run(c.raw, func(t *testing.T) {
			var a testArgs
			err := DecodeArgs(json.RawMessage(c.raw), &a)
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidArgs) || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want ErrInvalidArgs containing %q", err, c.wantErr)
			}
		})
	}
}

func TestArgsSchema(t *testing.T) {
	var s struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
		Required             []string `json:"required"`
		AdditionalProperties *bool    `json:"additionalProperties"`
	}
	if err := json.Unmarshal(ArgsSchema[testArgs](map[string][]string{"mode": {"a", "b"}}), &s); err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Properties["mode"].Enum, ",") != "a,b" {
		t.Errorf("enum = %v", s.Properties["mode"].Enum)
	}
	if strings.Join(s.Required, ",") != "path" {
		t.Errorf("required = %v", s.Required)
	}
	if s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Errorf("additional properties must be refused, as DecodeArgs refuses them")
	}
}
