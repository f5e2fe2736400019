package demo

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// schema is the part of a JSON Schema the demo fills arguments from.
type schema struct {
	Type        any                `json:"type"`
	Description string             `json:"description"`
	Properties  map[string]*schema `json:"properties"`
	Required    []string           `json:"required"`
	Enum        []any              `json:"enum"`
	Const       any                `json:"const"`
	Items       *schema            `json:"items"`
	Format      string             `json:"format"`
}

func parseSchema(raw json.RawMessage) *schema {
	s := &schema{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, s)
	}
	return s
}

// is reports whether the schema's type is (or includes) t.
func (s *schema) is(t string) bool {
	switch v := s.Type.(type) {
	case string:
		return v == t
	case []any:
		return slices.Contains(v, any(t))
	}
	return false
}

// names are the property names, sorted, for a deterministic order.
func (s *schema) names() []string {
	out := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// subAgent reports whether a tool's parameters are those of ruleagent's
// sub-agent tools (a chain with no input schema of its own): a message, or
// a conversation of messages.
func (s *schema) subAgent() bool {
	m, ms := s.Properties["message"], s.Properties["messages"]
	return m != nil && ms != nil && m.is("string") && ms.is("array") && len(s.Required) == 0
}

// textLike names properties that take the user's whole message.
var textLike = []string{"message", "text", "query", "question", "prompt", "input", "task", "content",
	"request", "instructions", "body", "note", "comment", "search", "q"}

// labelLike names properties that take a short text: the quoted part of the
// message, else its beginning.
var labelLike = []string{"title", "subject", "topic", "name", "label", "heading", "caption"}

// idLike reports a property that takes an identifier: its name ends in
// id or ids (orderId, chain_id, id), or names a number or code.
func idLike(name string, p *schema) bool {
	n := strings.ToLower(name)
	for _, suffix := range []string{"id", "ids", "number", "code", "ref", "sku"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	d := strings.ToLower(p.Description)
	return strings.Contains(d, " id ") || strings.Contains(d, " id,") || strings.Contains(d, " id.") || strings.HasPrefix(d, "id ")
}

// filler fills tool arguments from one user message.
type filler struct {
	text    string
	ids     []string
	usedIDs int
}

func newFiller(text string) *filler {
	return &filler{text: text, ids: ids(text)}
}

// fill finds a value for one property, and whether one was found.
func (f *filler) fill(name string, p *schema) (any, bool) {
	if p == nil {
		return nil, false
	}
	if p.Const != nil {
		return p.Const, true
	}
	if len(p.Enum) > 0 {
		return f.enum(p.Enum)
	}
	switch {
	case p.is("string"):
		return f.str(name, p)
	case p.is("integer") || p.is("number"):
		for _, m := range number.FindAllString(f.withoutIDs(), -1) {
			if p.is("integer") {
				if n, err := strconv.ParseInt(m, 10, 64); err == nil {
					return n, true
				}
				continue
			}
			if n, err := strconv.ParseFloat(m, 64); err == nil {
				return n, true
			}
		}
	}
	return nil, false
}

// enum picks the enum value the message names as a word.
func (f *filler) enum(values []any) (any, bool) {
	lower := strings.ToLower(f.text)
	for _, v := range values {
		s, ok := v.(string)
		if !ok || s == "" {
			continue
		}
		for _, w := range strings.FieldsFunc(lower, func(r rune) bool { return !isWordRune(r) }) {
			if w == strings.ToLower(s) {
				return s, true
			}
		}
	}
	return nil, false
}

func isWordRune(r rune) bool {
	return r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127
}

func (f *filler) str(name string, p *schema) (any, bool) {
	if idLike(name, p) {
		if f.usedIDs < len(f.ids) {
			f.usedIDs++
			return f.ids[f.usedIDs-1], true
		}
		return nil, false
	}
	n := strings.ToLower(name)
	if slices.Contains(textLike, n) {
		return strings.TrimSpace(f.text), true
	}
	q, quoted := quote(f.text)
	switch {
	case quoted:
		return q, true
	case slices.Contains(labelLike, n):
		return clip(f.text, 60), true
	}
	return nil, false
}

// withoutIDs is the message with its identifiers blanked, so that the 1001
// of A-1001 is not taken for a number.
func (f *filler) withoutIDs() string {
	return idToken.ReplaceAllStringFunc(f.text, func(m string) string {
		if strings.IndexFunc(m, func(r rune) bool { return r < '0' || r > '9' }) < 0 {
			return m
		}
		return " "
	})
}

// sample makes a value that fits a schema, for JSON answers: the message
// where a text fits, placeholders elsewhere.
func sample(s *schema, name, text string, depth int) any {
	if s == nil || depth > 6 {
		return nil
	}
	if s.Const != nil {
		return s.Const
	}
	if len(s.Enum) > 0 {
		if v, ok := (&filler{text: text}).enum(s.Enum); ok {
			return v
		}
		return s.Enum[0]
	}
	switch {
	case s.is("object") || s.Properties != nil:
		out := map[string]any{}
		for _, k := range s.names() {
			out[k] = sample(s.Properties[k], k, text, depth+1)
		}
		return out
	case s.is("array"):
		return []any{sample(s.Items, name, text, depth+1)}
	case s.is("integer"), s.is("number"):
		return 0
	case s.is("boolean"):
		return false
	case s.is("null"):
		return nil
	}
	switch s.Format {
	case "date":
		return "2026-01-01"
	case "date-time":
		return "2026-01-01T00:00:00Z"
	}
	return Marker + " " + name
}
