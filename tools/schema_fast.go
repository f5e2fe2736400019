package tools

import (
	"encoding/json"
	"math"

	"github.com/tidwall/gjson"
)

// fastSchema validates the subset of JSON Schema that almost every tool
// uses (an object of typed properties, required names, string enums,
// additionalProperties) directly on the argument bytes, without decoding
// them. It runs on every tool call, so it must not allocate. A schema using
// anything else has no fast form; a call the fast check rejects is checked
// again by the full validator, which explains the failure.
type fastSchema struct {
	props      map[string]fastProp
	required   []string
	closed     bool // additionalProperties: false
	bitIndex   map[string]int
	requiredOK uint64
}

type fastProp struct {
	types uint8 // bit set of jsonType*; 0 = any
	enum  []string
}

const (
	jsonString uint8 = 1 << iota
	jsonNumber
	jsonInteger
	jsonBoolean
	jsonObject
	jsonArray
	jsonNull
)

var typeBits = map[string]uint8{"string": jsonString, "number": jsonNumber, "integer": jsonInteger,
	"boolean": jsonBoolean, "object": jsonObject, "array": jsonArray, "null": jsonNull}

// ignoredKeywords never change whether a value is valid.
var ignoredKeywords = map[string]bool{"description": true, "title": true, "default": true, "examples": true,
	"$schema": true, "$id": true, "$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true, "format": true}

// compileFast returns the fast form of a schema document, or nil.
func compileFast(doc []byte) *fastSchema {
	var top map[string]json.RawMessage
	if json.Unmarshal(doc, &top) != nil {
		return nil
	}
	fs := &fastSchema{props: map[string]fastProp{}, bitIndex: map[string]int{}}
	for k, v := range top {
		switch k {
		case "type":
			var t string
			if json.Unmarshal(v, &t) != nil || t != "object" {
				return nil
			}
		case "properties":
			var props map[string]json.RawMessage
			if json.Unmarshal(v, &props) != nil {
				return nil
			}
			for name, pv := range props {
				p, ok := compileFastProp(pv)
				if !ok {
					return nil
				}
				fs.props[name] = p
			}
		case "required":
			if json.Unmarshal(v, &fs.required) != nil || len(fs.required) > 64 {
				return nil
			}
		case "additionalProperties":
			var b bool
			if json.Unmarshal(v, &b) != nil {
				return nil
			}
			fs.closed = !b
		default:
			if !ignoredKeywords[k] {
				return nil
			}
		}
	}
	for i, r := range fs.required {
		fs.bitIndex[r] = i
		fs.requiredOK |= 1 << i
	}
	return fs
}

func compileFastProp(raw json.RawMessage) (fastProp, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return fastProp{}, false
	}
	var p fastProp
	for k, v := range m {
		switch k {
		case "type":
			var one string
			var many []string
			switch {
			case json.Unmarshal(v, &one) == nil:
				many = []string{one}
			case json.Unmarshal(v, &many) == nil:
			default:
				return p, false
			}
			for _, t := range many {
				bit, ok := typeBits[t]
				if !ok {
					return p, false
				}
				p.types |= bit
			}
		case "enum":
			if json.Unmarshal(v, &p.enum) != nil || len(p.enum) == 0 {
				return p, false // non-string enums: leave to the full validator
			}
		default:
			if !ignoredKeywords[k] {
				return p, false
			}
		}
	}
	return p, true
}

// valid reports whether args (already known to be valid JSON) satisfy the
// schema. false means "not proven valid", not "invalid".
func (fs *fastSchema) valid(args []byte) bool {
	root := gjson.ParseBytes(args)
	if !root.IsObject() {
		return false
	}
	var seen uint64
	ok := true
	root.ForEach(func(k, v gjson.Result) bool {
		p, known := fs.props[k.Str]
		if !known {
			if fs.closed {
				ok = false
			}
			return ok
		}
		if i, req := fs.bitIndex[k.Str]; req {
			seen |= 1 << i
		}
		if !p.accepts(v) {
			ok = false
		}
		return ok
	})
	return ok && seen&fs.requiredOK == fs.requiredOK
}

func (p fastProp) accepts(v gjson.Result) bool {
	if p.types != 0 {
		var bit uint8
		switch v.Type {
		case gjson.String:
			bit = jsonString
		case gjson.Number:
			bit = jsonNumber
			if v.Num == math.Trunc(v.Num) {
				bit |= jsonInteger
			}
		case gjson.True, gjson.False:
			bit = jsonBoolean
		case gjson.Null:
			bit = jsonNull
		case gjson.JSON:
			if v.IsArray() {
				bit = jsonArray
			} else {
				bit = jsonObject
			}
		}
		if p.types&bit == 0 {
			return false
		}
	}
	if p.enum != nil {
		if v.Type != gjson.String {
			return false
		}
		for _, e := range p.enum {
			if e == v.Str {
				return true
			}
		}
		return false
	}
	return true
}
