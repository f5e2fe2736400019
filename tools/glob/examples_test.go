package glob

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// examples are the calls the documentation shows. They must pass the
// schema check the wrapper applies, and then succeed.
var examples = []string{
	`{"pattern":"**/*.go"}`,
	`{"pattern":"**/*.{ts,tsx}","path":"src"}`,
	`{"pattern":"**/*_test.go","sort":"mtime","max_results":20}`,
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
	for _, bad := range []string{`{}`, `{"pattern":"*","sort":"size"}`, `{"pattern":"*","max_results":"3"}`} {
		if err := schema.Validate([]byte(bad)); err == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}
