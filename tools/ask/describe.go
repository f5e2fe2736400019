package ask

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// maxDescribed bounds how much of a question Describe quotes, so that a
// long form cannot flood the error a model reads.
const maxDescribed = 600

// Describe says in one line what a question asks, for an error that a
// model or a person reads: the message quoted, then the fields of the
// answer it expects with their types, required ones marked.
//
//	"What is your name?" (fields: name string required)
//	"Delete the branch?" (accept or decline)
func Describe(q Question) string {
	var b strings.Builder
	b.WriteString(strconv.Quote(q.Message))
	if fields := describeFields(q.Schema); fields != "" {
		b.WriteString(" (fields: " + fields + ")")
	} else {
		b.WriteString(" (accept or decline)")
	}
	s := b.String()
	if len(s) > maxDescribed {
		s = s[:maxDescribed] + "…"
	}
	return s
}

// describeFields lists an object schema's properties: name, type (or the
// enum's values), "required".
func describeFields(schema json.RawMessage) string {
	if len(schema) == 0 {
		return ""
	}
	var s struct {
		Properties map[string]struct {
			Type  any    `json:"type"`
			Enum  []any  `json:"enum"`
			Title string `json:"title"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return ""
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		p := s.Properties[name]
		part := name
		switch {
		case len(p.Enum) > 0:
			vals := make([]string, len(p.Enum))
			for i, v := range p.Enum {
				b, _ := json.Marshal(v)
				vals[i] = string(b)
			}
			part += " one of " + strings.Join(vals, "|")
		case p.Type != nil:
			b, _ := json.Marshal(p.Type)
			part += " " + strings.Trim(string(b), `"`)
		}
		if slices.Contains(s.Required, name) {
			part += " required"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}
