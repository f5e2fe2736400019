package components

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/configerr"
	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
)

func TestInitRejectsBadConfigNamingTheField(t *testing.T) {
	cases := []struct {
		extra map[string]any
		field string
	}{
		{map[string]any{"maxSteps": 3}, "maxSteps: unknown field"},
		{map[string]any{"maxStep": 0}, "maxStep"},
		{map[string]any{"timeout": "soon"}, "timeout"},
		{map[string]any{"retryBackoff": "-1s"}, "retryBackoff"},
		{map[string]any{"params": map[string]any{"temprature": 0.2}}, "params"},
		{map[string]any{"failover": []any{map[string]any{"url": "ftp://x", "model": "m"}}}, "failover[0].url"},
		{map[string]any{"failover": []any{map[string]any{"url": "http://x"}}}, "failover[0].model"},
		{map[string]any{"url": "localhost:1234"}, "url"},
		{map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "no_such_tool"}}}, "tools[0].name"},
		{map[string]any{"tools": []any{map[string]any{"type": "magic"}}}, "tools[0].type"},
		{map[string]any{"tools": []any{map[string]any{"type": "rulechain", "name": "x"}}}, "tools[0].targetId"},
		{map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "test_add"}, map[string]any{"type": "builtin", "name": "test_add"}}}, `two tools are named "test_add"`},
		{map[string]any{"aspects": []any{"nope"}}, "aspects[0]"},
		{map[string]any{"repeatLimit": 1}, "repeatLimit"},
		{map[string]any{"maxStep": "abc"}, `maxStep: the string "abc" is not an integer`},
		{map[string]any{"parallelToolCalls": "sometimes"}, `parallelToolCalls: the string "sometimes" is not a boolean`},
		{map[string]any{"maxStpe": 3}, `maxStpe: unknown field (did you mean "maxStep"?)`},
	}
	for _, c := range cases {
		id, dsl := agentChain(t, "http://127.0.0.1:1/v1", c.extra)
		_, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig()))
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%v: err %v; want it to name %q", c.extra, err, c.field)
		}
	}
}

func TestParamsAreSentAsConfigured(t *testing.T) {
	var p parsed
	_ = p
	c := defaultConfig()
	c.URL, c.Model = "http://x/v1", "m"
	c.Params = map[string]any{"temperature": 0, "maxTokens": 100, "stop": []any{"END"},
		"extraFields": map[string]any{"thinking.type": "enabled", "top_k": 5}}
	got, err := c.parse()
	if err != nil {
		t.Fatal(err)
	}
	pp := got.llm.Endpoints[0].Params
	if pp.Temperature == nil || *pp.Temperature != 0 || *pp.MaxTokens != 100 || pp.ExtraFields["thinking.type"] != "enabled" {
		t.Fatalf("%+v", pp)
	}
}

func TestComponentForm(t *testing.T) {
	forms := rulego.Registry.GetComponentForms()
	for _, f := range forms {
		if f.Type != AgentType {
			continue
		}
		if f.Label != "AI Agent" || f.Category != "ai" || f.Desc == "" {
			t.Fatalf("form %+v", f)
		}
		fields := map[string]types.ComponentFormField{}
		for _, fl := range f.Fields {
			fields[fl.Name] = fl
		}
		for _, name := range configerr.FieldNames(reflect.TypeFor[Config]()) {
			fl, ok := fields[name]
			if !ok || fl.Label == "" || fl.Desc == "" {
				t.Errorf("field %s: %+v", name, fl)
			}
		}
		if fields["maxStep"].DefaultValue != 25 {
			b, _ := json.Marshal(fields["maxStep"])
			t.Errorf("maxStep default: %s", b)
		}
		return
	}
	t.Fatal("ai/agent missing from GetComponentForms")
}
