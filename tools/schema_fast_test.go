package tools

import (
	"encoding/json"
	"testing"
)

var fastSchemas = []string{
	`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"integer"}},"required":["a","b"]}`,
	`{"type":"object","properties":{"mode":{"type":"string","enum":["create","overwrite"]},"path":{"type":"string","description":"p"}},"required":["path"],"additionalProperties":false}`,
	`{"type":"object","properties":{"x":{"type":["string","null"]},"flag":{"type":"boolean"},"o":{"type":"object"},"l":{"type":"array"}}}`,
	`{"type":"object"}`,
}

// FuzzFastSchema checks that the fast path never accepts arguments the full
// validator rejects, and that it accepts what the full validator accepts.
func FuzzFastSchema(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":2}`, `{"a":1.5,"b":2.0}`, `{"a":"1","b":2}`, `{"path":"x","mode":"create"}`,
		`{"path":"x","mode":"bad"}`, `{"path":"x","extra":1}`, `{"x":null,"flag":true,"o":{},"l":[1]}`, `[]`, `"s"`, `{"a":1}`,
		`{"a":1,"b":2,"a":"dup"}`, `{"b":1e400,"a":1}`, `{"x":"\u0000"}`, `{"pa\u0074h":"x"}`} {
		for i := range fastSchemas {
			f.Add(i, s)
		}
	}
	compiled := make([]*Schema, len(fastSchemas))
	for i, s := range fastSchemas {
		c, err := CompileSchema([]byte(s))
		if err != nil || c.fast == nil {
			f.Fatalf("schema %d: fast form missing (%v)", i, err)
		}
		compiled[i] = c
	}
	f.Fuzz(func(t *testing.T, i int, args string) {
		if i < 0 || i >= len(compiled) {
			return
		}
		s := compiled[i]
		full := fullValid(s, []byte(args))
		fast := json.Valid([]byte(args)) && s.fast.valid([]byte(args))
		if fast && !full {
			t.Fatalf("schema %d: fast path accepted %q, full validator rejects it", i, args)
		}
	})
}

func fullValid(s *Schema, args []byte) bool {
	fast := s.fast
	s.fast = nil
	defer func() { s.fast = fast }()
	return s.Validate(args) == nil
}

func TestFastSchemaCompleteness(t *testing.T) {
	s, _ := CompileSchema([]byte(fastSchemas[0]))
	for _, args := range []string{`{"a":1,"b":2}`, `{"a":1.5,"b":2.0,"c":"x"}`} {
		if !s.fast.valid([]byte(args)) || !fullValid(s, []byte(args)) {
			t.Fatalf("%s should be valid both ways", args)
		}
	}
	for _, doc := range []string{`{"type":"object","properties":{"n":{"type":"number","minimum":1}}}`, `{"oneOf":[{"type":"object"}]}`,
		`{"type":"object","properties":{"e":{"enum":[1,2]}}}`} {
		c, err := CompileSchema([]byte(doc))
		if err != nil || c.fast != nil {
			t.Fatalf("%s: want no fast form (err %v)", doc, err)
		}
	}
}
