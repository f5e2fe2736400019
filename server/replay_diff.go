package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// diffJSON names the first difference between two JSON documents (object
// keys in sorted order, arrays element by element), nil when they are
// the same value. Field is the path of the difference (messages[3].content).
func diffJSON(want, got []byte) *Divergence {
	w, err := decodeJSON(want)
	if err != nil {
		return &Divergence{Field: "the recorded JSON: " + err.Error()}
	}
	g, err := decodeJSON(got)
	if err != nil {
		return &Divergence{Field: "(not JSON)", Recorded: clip(string(want)), Replayed: clip(string(got))}
	}
	if path, a, b, differ := firstDiff("", w, g); differ {
		return &Divergence{Field: path, Recorded: clip(show(a)), Replayed: clip(show(b))}
	}
	return nil
}

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// firstDiff walks a and b together and returns the path of the first
// difference and the values there.
func firstDiff(path string, a, b any) (string, any, any, bool) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path, a, b, true
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			av, aok := x[k]
			bv, bok := y[k]
			if !aok || !bok {
				return p, missing(av, aok), missing(bv, bok), true
			}
			if q, u, v, d := firstDiff(p, av, bv); d {
				return q, u, v, true
			}
		}
		return "", nil, nil, false
	case []any:
		y, ok := b.([]any)
		if !ok {
			return path, a, b, true
		}
		for i := 0; i < len(x) || i < len(y); i++ {
			p := path + "[" + strconv.Itoa(i) + "]"
			if i >= len(x) || i >= len(y) {
				var u, v any = absent{}, absent{}
				if i < len(x) {
					u = x[i]
				}
				if i < len(y) {
					v = y[i]
				}
				return p, u, v, true
			}
			if q, u, v, d := firstDiff(p, x[i], y[i]); d {
				return q, u, v, true
			}
		}
		return "", nil, nil, false
	case json.Number:
		y, ok := b.(json.Number)
		if ok && numbersEqual(x, y) {
			return "", nil, nil, false
		}
		return path, a, b, true
	}
	if a != b {
		return path, a, b, true
	}
	return "", nil, nil, false
}

// absent stands for a value that is not there.
type absent struct{}

func missing(v any, ok bool) any {
	if !ok {
		return absent{}
	}
	return v
}

func numbersEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, err1 := a.Float64()
	y, err2 := b.Float64()
	return err1 == nil && err2 == nil && x == y
}

// show is a value as a message shows it: JSON, or "(absent)".
func show(v any) string {
	if _, ok := v.(absent); ok {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// clip keeps a value short enough for a message.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
