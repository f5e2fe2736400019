package grep

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// examples are the calls the documentation shows. They must pass the
// schema check the wrapper applies, and then succeed.
var examples = []string{
	`{"pattern":"func \\w+\\(","include":"*.go"}`,
	`{"pattern":"Hello()","literal":true,"path":"util.go"}`,
	`{"pattern":"hello","path":"docs","context":1,"ignore_case":true}`,
	`{"pattern":"hello","output_mode":"files_with_matches","exclude":"vendor","max_results":10}`,
	`{"pattern":"hello","output_mode":"count"}`,
}

func TestExamples(t *testing.T) {
	tool, _ := newTool(t, "")
	schema, err := tools.CompileSchema(tool.Info().Parameters)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range examples {
		if err := schema.Validate([]byte(ex)); err != nil {
			t.Errorf("%s: schema: %v", ex, err)
		}
		res, err := tool.Call(context.Background(), json.RawMessage(ex))
		if err != nil {
			t.Errorf("%s: %v", ex, err)
		}
		t.Logf("%s\n%s", ex, res.Text)
	}
	for _, bad := range []string{`{}`, `{"pattern":"x","output_mode":"lines"}`, `{"pattern":"x","context":"2"}`} {
		if err := schema.Validate([]byte(bad)); err == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}
