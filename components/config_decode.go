package components

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	rgmaps "github.com/rulego/rulego/utils/maps"

	"github.com/ruleagent/ruleagent/configerr"
)

// decodeNodeConfig reads a node's configuration into dst, a pointer to the
// node's Config struct, with RuleGo's own Map2Struct (and so its weak
// typing: "7" is read as 7, a string as a one-element list). Keys the
// struct does not have are refused, naming the closest one; a value
// Map2Struct cannot read is refused naming its field and the type the field
// takes, instead of mapstructure's text. Keys RuleGo adds (vars, secrets,
// $chainCtx...) are not the chain's and are skipped.
func decodeNodeConfig(configuration map[string]any, dst any) error {
	t := reflect.TypeOf(dst).Elem()
	known := configerr.FieldNames(t)
	keys := slices.Sorted(maps.Keys(configuration))
	for _, k := range keys {
		if !ruleGoKey(k) && !slices.Contains(known, k) {
			return configerr.Unknown("", k, known)
		}
	}
	err := rgmaps.Map2Struct(configuration, dst)
	if err == nil {
		return nil
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		fields[name] = t.Field(i).Type
	}
	for _, k := range keys {
		if ruleGoKey(k) {
			continue
		}
		probe := reflect.New(t).Interface()
		if ferr := rgmaps.Map2Struct(map[string]any{k: configuration[k]}, probe); ferr != nil {
			return &configerr.Error{Path: k, Msg: fmt.Sprintf("%s is not %s", describeValue(configuration[k]), configerr.TypeName(fields[k])), Err: ferr}
		}
	}
	return configerr.Wrap("", err)
}

// describeValue names a configuration value in a message: a string
// quoted (and cut when long), other values by their JSON kind.
func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("the boolean %t", x)
	case float64, float32, int, int64, json.Number:
		return fmt.Sprintf("the number %v", x)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}
