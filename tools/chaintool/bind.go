package chaintool

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/ruleagent/ruleagent/tools"
)

// binding fills one parameter from somewhere other than the model.
type binding struct {
	param string
	src   tools.BindSource
}

func parseBinds(m map[string]string) ([]binding, error) {
	var out []binding
	for param, s := range m {
		src, err := tools.ParseBind(s)
		if err != nil {
			return nil, &tools.ConfigError{Path: "bind." + param, Msg: err.Error(), Err: err}
		}
		out = append(out, binding{param: param, src: src})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].param < out[j].param })
	return out, nil
}

// hideBound removes bound parameters from the schema the model sees, so the
// model is never asked for them and cannot supply them.
func hideBound(schema json.RawMessage, binds []binding) (json.RawMessage, error) {
	if len(binds) == 0 {
		return schema, nil
	}
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, &tools.ConfigError{Path: "parameters", Msg: err.Error(), Err: err}
	}
	props, _ := s["properties"].(map[string]any)
	for _, b := range binds {
		delete(props, b.param)
	}
	if req, ok := s["required"].([]any); ok {
		req = slices.DeleteFunc(req, func(v any) bool {
			name, _ := v.(string)
			return slices.ContainsFunc(binds, func(b binding) bool { return b.param == name })
		})
		if len(req) == 0 {
			delete(s, "required")
		} else {
			s["required"] = req
		}
	}
	return json.Marshal(s)
}

// fill sets the bound parameters in args, overriding anything the model
// put there: identity fields come from the run, never from the model.
func fill(args map[string]any, binds []binding, v *tools.BindValues) error {
	for _, b := range binds {
		var (
			val string
			ok  bool
		)
		switch b.src.Kind {
		case "const":
			val, ok = b.src.Key, true
		case "metadata":
			val, ok = lookup(v, func(v *tools.BindValues) map[string]string { return v.Metadata }, b.src.Key)
		case "vars":
			val, ok = lookup(v, func(v *tools.BindValues) map[string]string { return v.Vars }, b.src.Key)
		case "global":
			val, ok = lookup(v, func(v *tools.BindValues) map[string]string { return v.Global }, b.src.Key)
		}
		if !ok {
			return tools.Errorf(tools.ErrExecutionFailed, "parameter %q is bound to %s.%s, which is not set for this run", b.param, b.src.Kind, b.src.Key)
		}
		args[b.param] = val
	}
	return nil
}

func lookup(v *tools.BindValues, pick func(*tools.BindValues) map[string]string, key string) (string, bool) {
	if v == nil {
		return "", false
	}
	val, ok := pick(v)[key]
	return val, ok
}

// decodeArgs reads the model's arguments as a JSON object.
func decodeArgs(raw json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if len(raw) == 0 {
		return args, nil
	}
	if err := json.Unmarshal(raw, &args); err != nil || args == nil {
		return nil, tools.Errorf(tools.ErrInvalidArgs, "arguments must be a JSON object: %s", fmt.Sprint(err))
	}
	return args, nil
}
