package components

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/tools"
	mcptool "github.com/ruleagent/ruleagent/tools/mcp"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// saverPower is what an agent that saves a chain may do.
type saverPower struct {
	chain, node string
	workspace   string
	endpoints   []llmEndpoint
	specs       []tools.Spec
}

func powerOf(s Saver) (*saverPower, error) {
	sp := &saverPower{chain: s.ChainID, node: s.NodeID, workspace: workspaceOf(s.Config), endpoints: endpointsOf(s.Config)}
	raw, _ := json.Marshal(s.Config["tools"])
	specs, err := tools.ParseSpecs(raw)
	if err != nil {
		return nil, err
	}
	sp.specs = specs
	return sp, nil
}

func (sp *saverPower) name() string { return fmt.Sprintf("%q (chain %s)", sp.node, sp.chain) }

// calls reports whether the saver can run chain id itself: through a
// rulechain or agent tool for it, or an unfiltered self MCP entry when the
// chain is exposed there.
func (sp *saverPower) calls(id string, exposed func(string) bool) bool {
	for _, s := range sp.specs {
		switch s.Type {
		case tools.TypeRuleChain, tools.TypeAgent:
			if s.TargetID == id {
				return true
			}
		case tools.TypeMCP:
			if _, self, err := mcptool.Describe(s); err == nil && self && exposed != nil && exposed(id) && len(list(effective(mcptool.ConfigSchema(), s.Config)["tools"])) == 0 {
				return true
			}
		}
	}
	return false
}

// covers returns "" when one of the saver's entries of the same kind
// allows everything s does, else why none does.
func (sp *saverPower) covers(s tools.Spec) string {
	schema := mcptool.ConfigSchema()
	what := "MCP server entry"
	if s.Type == tools.TypeBuiltin {
		def, ok := tools.Builtins.Lookup(s.Name)
		if !ok {
			return "" // reported by Validate
		}
		schema, what = def.ConfigSchema, s.Name+" tool"
	}
	saved := effective(schema, s.Config)
	why := fmt.Sprintf("the saving agent %s has no %s", sp.name(), what)
	for _, own := range sp.specs {
		if own.Type != s.Type || (s.Type == tools.TypeBuiltin && own.Name != s.Name) {
			continue
		}
		diff := narrower(saved, effective(schema, own.Config))
		if diff == "" {
			return ""
		}
		why = fmt.Sprintf("this %s gives more than the saving agent %s has: %s", what, sp.name(), diff)
	}
	return why
}

// effective is a config as its tool reads it: the schema's defaults, then
// the keys given (matched regardless of case, as the decoder matches
// them).
func effective(schema json.RawMessage, raw json.RawMessage) map[string]any {
	var s struct {
		Properties map[string]struct {
			Default any `json:"default"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	out := map[string]any{}
	for k, p := range s.Properties {
		out[k] = p.Default
	}
	var given map[string]any
	_ = json.Unmarshal(raw, &given)
	for k, v := range given {
		key := k
		for known := range s.Properties {
			if strings.EqualFold(known, k) {
				key = known
			}
		}
		out[key] = v
	}
	return out
}

// narrower returns "" when a config (saved) allows nothing the other
// (own) does not, else the first setting that allows more. A setting is
// compared by its order where it has one (a shorter timeout, fewer hosts,
// more deny entries, a stronger sandbox); any other must be equal.
func narrower(saved, own map[string]any) string {
	keys := slices.Sorted(maps.Keys(saved))
	for k := range own {
		if _, ok := saved[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		a, b := saved[k], own[k]
		if why := compareSetting(k, a, b); why != "" {
			return k + ": " + why
		}
	}
	return ""
}

func compareSetting(k string, a, b any) string {
	switch {
	case k == "sandbox":
		return compareSandbox(a, b)
	case k == "network":
		return order(networkRank(a), networkRank(b), "a wider network")
	case k == "interpreters":
		if strOf(a) == "on" && strOf(b) != "on" {
			return "interpreters on"
		}
		return ""
	case k == "format" || k == "required" || k == "connectTimeout" || k == "appendSeparator" || k == "useChinese":
		return "" // how results look, or how patient a connection is: no power
	case k == "timeout" || k == "limit" || strings.HasPrefix(k, "max"):
		if d, ok := quantity(a); ok {
			if e, ok := quantity(b); ok && d > e {
				return "a higher limit"
			}
			return ""
		}
	case strings.HasPrefix(k, "deny") || k == "disabledSkills":
		return subset(b, a, "fewer deny entries")
	case k == "allowHosts" || k == "tools":
		if len(list(b)) == 0 {
			return ""
		}
		if len(list(a)) == 0 {
			return "every one instead of a list"
		}
		return subset(a, b, "more entries")
	case k == "allow" || k == "allowGroups" || k == "allowPrivate" || k == "methods" || k == "connect" ||
		k == "sandboxRead" || k == "sandboxWrite" || k == "read" || k == "write":
		return subset(a, b, "more entries")
	}
	if !sameValue(a, b) {
		if k == "server" || k == "command" || k == "args" {
			return "another server"
		}
		return "differs"
	}
	return ""
}

// compareSandbox compares bash's sandbox mode (a string, "" the process
// default) or a stdio MCP server's sandbox object (nil: unconfined).
func compareSandbox(a, b any) string {
	am, bm := a, b
	ao, aObj := a.(map[string]any)
	bo, bObj := b.(map[string]any)
	if aObj || bObj || (a == nil && b == nil) {
		// A stdio server's sandbox object.
		am, bm = sandbox.Off, sandbox.Off
		if aObj {
			am = cmpOr(strOf(ao["mode"]), string(sandbox.BestEffort))
		}
		if bObj {
			bm = cmpOr(strOf(bo["mode"]), string(sandbox.BestEffort))
		}
		if why := order(ModeRank(sandbox.Mode(strOf(bm))), ModeRank(sandbox.Mode(strOf(am))), "a weaker sandbox"); why != "" || !aObj {
			return why
		}
		if !bObj {
			return ""
		}
		return narrower(map[string]any{"network": ao["network"], "connect": ao["connect"], "read": ao["read"], "write": ao["write"]},
			map[string]any{"network": bo["network"], "connect": bo["connect"], "read": bo["read"], "write": bo["write"]})
	}
	mode := func(v any) sandbox.Mode {
		m, err := sandbox.ParseMode(strOf(v))
		if err != nil {
			return ""
		}
		return m
	}
	return order(ModeRank(mode(b)), ModeRank(mode(a)), "a weaker sandbox")
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// order refuses a saved rank above the saver's own.
func order(saved, own int, what string) string {
	if saved > own {
		return what
	}
	return ""
}

func networkRank(v any) int {
	switch strOf(v) {
	case "", sandbox.NetworkOff:
		return 0
	case sandbox.NetworkLoopback:
		return 1
	}
	return 2
}

// quantity reads a number, or a duration given as milliseconds or "30s".
func quantity(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case nil:
		return 0, true
	case string:
		if ms, err := strconv.ParseFloat(x, 64); err == nil {
			return ms, true
		}
		if d, err := time.ParseDuration(x); err == nil {
			return float64(d.Milliseconds()), true
		}
	}
	return 0, false
}

// subset refuses entries of a missing from b.
func subset(a, b any, what string) string {
	own := list(b)
	for _, e := range list(a) {
		if !slices.ContainsFunc(own, func(o any) bool { return sameValue(o, e) }) {
			return fmt.Sprintf("%s (%v)", what, e)
		}
	}
	return ""
}

func list(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case string:
		if x != "" {
			return []any{x}
		}
	}
	return nil
}

func strOf(v any) string {
	s, _ := v.(string)
	return s
}

// sameValue compares JSON values, a missing value equal to a zero one.
func sameValue(a, b any) bool {
	if zeroJSON(a) && zeroJSON(b) {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func zeroJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
