package configerr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Decode decodes a JSON object into dst strictly: an unknown field, a value
// of the wrong type, a value a field's UnmarshalJSON refuses, malformed
// JSON and trailing data are each an *Error naming the field (with the
// known field closest to an unknown one), relative to the object. An empty
// or null raw value leaves dst unchanged.
func Decode(raw []byte, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return New("", "must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return FromJSON(err, raw, dst)
	}
	if _, err := dec.Token(); err != io.EOF {
		return New("", "trailing data after the object")
	}
	return nil
}

// FromJSON turns an error of encoding/json, met decoding raw into dst, into
// an *Error naming the field: the decoder's own errors carry no path for a
// value that a field's UnmarshalJSON refused, nor a suggestion for an
// unknown field.
func FromJSON(err error, raw []byte, dst any) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the bytes read, the offending one included.
		line, col := Position(raw, max(se.Offset-1, 0))
		return &Error{Msg: fmt.Sprintf("not valid JSON at line %d, column %d: %s", line, col, strings.TrimPrefix(se.Error(), "json: ")), Err: err}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &Error{Path: te.Field, Msg: fmt.Sprintf("%s is not %s", article(te.Value), TypeName(te.Type)), Err: err}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return Unknown("", name, FieldNames(reflect.TypeOf(dst)))
	}
	// A field's UnmarshalJSON refused its value: find which field.
	if path, ferr := failingField(raw, dst); path != "" {
		return &Error{Path: path, Msg: strings.TrimPrefix(ferr.Error(), "json: "), Err: ferr}
	}
	return &Error{Msg: strings.TrimPrefix(msg, "json: "), Err: err}
}

// failingField decodes raw's members one by one into fresh values of the
// matching fields of dst's struct type, and returns the first that fails.
func failingField(raw []byte, dst any) (string, error) {
	t := reflect.TypeOf(dst)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return "", nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return "", nil
	}
	fields := jsonFields(t)
	for key, v := range members {
		for name, ft := range fields {
			if strings.EqualFold(name, key) {
				if err := json.Unmarshal(v, reflect.New(ft).Interface()); err != nil {
					return name, err
				}
			}
		}
	}
	return "", nil
}

// Unknown is the error of an unknown key at path: it names the known key
// the author most likely meant, when one is close.
func Unknown(path, key string, known []string) *Error {
	msg := "unknown field"
	if s := Suggest(key, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	} else if len(known) > 0 && len(known) <= 30 {
		msg += " (fields: " + strings.Join(known, ", ") + ")"
	}
	return &Error{Path: Join(path, key), Msg: msg}
}

// FieldNames lists the JSON names of a struct type's fields (t may be a
// pointer to it), in declaration order.
func FieldNames(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		if name, ok := jsonName(t.Field(i)); ok {
			out = append(out, name)
		}
	}
	return out
}

func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if name, ok := jsonName(f); ok {
			out[name] = f.Type
		}
	}
	return out
}

func jsonName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, true
}

// Namer is implemented by configuration types whose JSON form is not what
// their Go kind says (a duration given as milliseconds or "30s").
type Namer interface {
	// ConfigTypeName describes the accepted JSON, after "is not":
	// `a duration (milliseconds or "30s")`.
	ConfigTypeName() string
}

var namerType = reflect.TypeFor[Namer]()

// TypeName describes the JSON a Go type accepts, for messages: "an
// integer", "a list", "a string".
func TypeName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	if t.Implements(namerType) {
		return reflect.Zero(t).Interface().(Namer).ConfigTypeName()
	}
	if reflect.PointerTo(t).Implements(namerType) {
		return reflect.New(t).Interface().(Namer).ConfigTypeName()
	}
	switch t.Kind() {
	case reflect.Pointer:
		return TypeName(t.Elem())
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Interface:
		return "a value"
	}
	return t.String()
}

// article puts "a" or "an" before encoding/json's name of a JSON value
// ("string", "number 1.5", "object").
func article(v string) string {
	if v == "" {
		return "the value"
	}
	if strings.ContainsRune("aeiou", rune(v[0])) {
		return "an " + v
	}
	return "a " + v
}

// Position is the line and column (from 1) of byte offset off in b.
func Position(b []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < off && i < int64(len(b)); i++ {
		if b[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// Suggest returns the name among known that key most likely misspells: the
// same name in another case, or one at most a few edits away (about one
// edit in three letters). "" when none is close.
func Suggest(key string, known []string) string {
	best, bestD := "", 0
	for _, k := range known {
		if k == key {
			return ""
		}
		if strings.EqualFold(k, key) {
			return k
		}
		d := distance(strings.ToLower(key), strings.ToLower(k))
		limit := max(1, max(len(key), len(k))/3)
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the optimal string alignment distance of a and b: the edits
// (insert, delete, substitute, swap two neighbours) that turn one into the
// other.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
