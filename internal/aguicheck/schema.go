package aguicheck

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// This file is a small validator for JSON decoded with UseNumber, shaped after
// the zod schemas the client's enforceEvents applies (@ag-ui/core's generated
// schemas.ts). Every object there is a zod looseObject: the client strips keys
// it does not describe and warns, which we report as violations because we
// never want to send them. A few positions are opaque (z.any / z.custom) and
// are never looked into.

// shape validates one JSON value at a JSON-pointer-like path ("" is the event).
type shape interface {
	validate(v any, path string, c *schemaCheck)
}

// schemaCheck collects the findings of one event's validation.
type schemaCheck struct {
	problems []string
}

func (c *schemaCheck) reportf(path, format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf("'%s': %s", displayPath(path), fmt.Sprintf(format, args...)))
}

func displayPath(path string) string {
	if path == "" {
		return "/"
	}
	return path
}

// field is one property of an object shape.
type field struct {
	shape    shape
	required bool
	// nullable: null is an accepted spelling of absence. Only
	// RunAgentInput.state has this; every other optional field must be omitted.
	nullable bool
}

func req(s shape) field { return field{shape: s, required: true} }
func opt(s shape) field { return field{shape: s} }

// object is a zod looseObject. open marks the objects the spec leaves open
// (the RFC 6902 operations), whose extra members are legal and kept silently.
type object struct {
	fields map[string]field
	open   bool
}

func (o *object) validate(v any, path string, c *schemaCheck) {
	m, ok := v.(map[string]any)
	if !ok {
		c.reportf(path, "expected an object, got %s", describe(v))
		return
	}
	o.validateFields(m, path, c)
}

func (o *object) validateFields(m map[string]any, path string, c *schemaCheck) {
	for _, key := range sortedKeys(m) {
		f, known := o.fields[key]
		if !known {
			if !o.open {
				c.reportf(path+"/"+key, "unknown field (the client strips it with a warning; custom data belongs in 'metadata')")
			}
			continue
		}
		val := m[key]
		if val == nil && !f.nullable {
			if f.required {
				c.reportf(path+"/"+key, "required field is null")
			} else {
				c.reportf(path+"/"+key, "optional field is null: omit it instead")
			}
			continue
		}
		if val != nil {
			f.shape.validate(val, path+"/"+key, c)
		}
	}
	for _, key := range sortedKeys(o.fields) {
		if _, present := m[key]; !present && o.fields[key].required {
			c.reportf(path+"/"+key, "required field is missing")
		}
	}
}

// union is a zod discriminatedUnion. A member whose tag matches no option is
// not fatal in the client: it is stripped with a warning (and, in a required
// position, takes its container with it), which we report all the same.
type union struct {
	discriminator string
	options       map[string]*object
}

func (u *union) validate(v any, path string, c *schemaCheck) {
	m, ok := v.(map[string]any)
	if !ok {
		c.reportf(path, "expected an object, got %s", describe(v))
		return
	}
	tag, _ := m[u.discriminator].(string)
	option, known := u.options[tag]
	if !known {
		c.reportf(path, "unrecognised %s %s (the client strips it with a warning); expected one of %s",
			u.discriminator, describe(m[u.discriminator]), strings.Join(sortedKeys(u.options), ", "))
		return
	}
	option.validateFields(m, path, c)
}

type array struct {
	elem shape
	min  int
}

func (a array) validate(v any, path string, c *schemaCheck) {
	items, ok := v.([]any)
	if !ok {
		c.reportf(path, "expected an array, got %s", describe(v))
		return
	}
	if len(items) < a.min {
		c.reportf(path, "expected at least %d element(s), got %d", a.min, len(items))
	}
	for i, item := range items {
		a.elem.validate(item, fmt.Sprintf("%s/%d", path, i), c)
	}
}

type str struct{}

func (str) validate(v any, path string, c *schemaCheck) {
	if _, ok := v.(string); !ok {
		c.reportf(path, "expected a string, got %s", describe(v))
	}
}

// enum is a z.enum or a z.literal of strings.
type enum []string

func (e enum) validate(v any, path string, c *schemaCheck) {
	s, ok := v.(string)
	if ok {
		for _, allowed := range e {
			if s == allowed {
				return
			}
		}
	}
	c.reportf(path, "expected %s, got %s", quoteAll(e), describe(v))
}

type boolean struct{}

func (boolean) validate(v any, path string, c *schemaCheck) {
	if _, ok := v.(bool); !ok {
		c.reportf(path, "expected a boolean, got %s", describe(v))
	}
}

// maxSafeInteger is Number.MAX_SAFE_INTEGER, the bound of zod's z.int().
const maxSafeInteger = 1<<53 - 1

// safeInt is z.int() with the safe-integer bounds. The client decodes with
// JSON.parse, so 1.0 and 1e3 are integers to it; 1.5 is not.
type safeInt struct{ nonNegative bool }

func (s safeInt) validate(v any, path string, c *schemaCheck) {
	n, ok := v.(json.Number)
	if !ok {
		c.reportf(path, "expected an integer, got %s", describe(v))
		return
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.Trunc(f) != f || math.Abs(f) > maxSafeInteger {
		c.reportf(path, "expected a safe integer, got %s", n)
		return
	}
	if s.nonNegative && f < 0 {
		c.reportf(path, "expected a non-negative integer, got %s", n)
	}
}

// anyJSON is z.any(): any present value. Whether null is allowed is the
// field's business (every optional one refuses it), so this accepts anything.
type anyJSON struct{}

func (anyJSON) validate(any, string, *schemaCheck) {}

// jsonObject is the z.custom object check of metadata and activity content: a
// non-null, non-array object, not looked into.
type jsonObject struct{}

func (jsonObject) validate(v any, path string, c *schemaCheck) {
	if _, ok := v.(map[string]any); !ok {
		c.reportf(path, "expected an object, got %s", describe(v))
	}
}

// jsonPointerPattern is the RFC 6901 pattern of @ag-ui/core's JsonPointerSchema.
var jsonPointerPattern = regexp.MustCompile(`^(/([^/~]|~[01])*)*$`)

type jsonPointer struct{}

func (jsonPointer) validate(v any, path string, c *schemaCheck) {
	s, ok := v.(string)
	if !ok {
		c.reportf(path, "expected a JSON pointer string, got %s", describe(v))
		return
	}
	if !jsonPointerPattern.MatchString(s) {
		c.reportf(path, "%q is not a JSON pointer (RFC 6901)", s)
	}
}

// stringOrArray is z.union([z.string(), z.array(elem)]), the shape of message
// and tool-result content.
type stringOrArray struct{ elem shape }

func (s stringOrArray) validate(v any, path string, c *schemaCheck) {
	switch v.(type) {
	case string:
	case []any:
		array{elem: s.elem}.validate(v, path, c)
	default:
		c.reportf(path, "expected a string or an array, got %s", describe(v))
	}
}

// describe renders a JSON value briefly for a message.
func describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		if len(t) > 40 {
			t = t[:40] + "…"
		}
		return strconv.Quote(t)
	case json.Number:
		return "number " + string(t)
	case bool:
		return "boolean " + strconv.FormatBool(t)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func quoteAll(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = strconv.Quote(v)
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return "one of " + strings.Join(quoted, ", ")
}

// sortedKeys makes reports deterministic whatever the map's iteration order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
