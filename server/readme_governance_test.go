package server

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// TestREADMEGovernanceExamples checks the examples of the README's
// Governance section against the code: every node configuration loads,
// every --policy parses, every audit record decodes into audit.Record
// without an unknown field, and the refusal shown is the one the wrapper
// gives.
func TestREADMEGovernanceExamples(t *testing.T) {
	section := readmeSection(t, "## Governance")
	var configs, records int
	for _, block := range fenced(section, "```json\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(block), &obj); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, block)
		}
		if _, ok := obj["kind"]; ok {
			records++
			dec := json.NewDecoder(strings.NewReader(block))
			dec.DisallowUnknownFields()
			var r audit.Record
			if err := dec.Decode(&r); err != nil || r.RunID == "" || r.Outcome == "" {
				t.Fatalf("audit record %v: %+v\n%s", err, r, block)
			}
			continue
		}
		configs++
		cfg := map[string]any{"url": "http://127.0.0.1:1/v1", "model": "m"}
		for k, v := range obj {
			cfg[k] = v
		}
		dsl, _ := json.Marshal(map[string]any{"ruleChain": map[string]any{"id": "x"}, "metadata": map[string]any{
			"nodes": []any{map[string]any{"id": "agent", "type": components.AgentType, "configuration": cfg}}}})
		errs, _ := components.Split(components.Validate([]components.ChainFile{{Path: "x.json", DSL: dsl}}, nil, components.Options{}))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", block, errs)
		}
	}
	if configs < 3 || records < 2 {
		t.Fatalf("%d configuration and %d record examples", configs, records)
	}
	flags := regexp.MustCompile(`--policy '([^']*)'`).FindAllStringSubmatch(section, -1)
	if len(flags) == 0 {
		t.Fatal("no --policy example")
	}
	for _, m := range flags {
		if p, err := LoadPolicy(m[1]); err != nil || p == nil {
			t.Fatalf("--policy %s: %v", m[1], err)
		}
	}
	refusal := "Error (permission_denied): " + policy.Decision{Tool: "bash", Effect: policy.Deny, Layer: policy.LayerServer,
		Rule: policy.RuleDeny, Match: "group:runtime"}.Err().Error()
	if !strings.Contains(section, "```\n"+refusal+"\n```") || !strings.Contains(section, `"error":"`+refusal+`"`) {
		t.Fatalf("the README does not show the refusal as it is:\n%s", refusal)
	}
}

// fenced returns the blocks of a section that open with fence.
func fenced(section, fence string) []string {
	var out []string
	for _, part := range strings.Split(section, fence)[1:] {
		if end := strings.Index(part, "```"); end >= 0 {
			out = append(out, strings.TrimSpace(part[:end]))
		}
	}
	return out
}
