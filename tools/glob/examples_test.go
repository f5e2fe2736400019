package glob

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// examples are the calls the documentation shows, and what each finds in
// the test workspace. They must pass the schema check the wrapper applies,
// and then answer exactly that.
var examples = []struct{ call, want string }{
	{`{"pattern":"**/*.go"}`, "link.go\nmain.go\nmain_test.go\nsrc/deep/er/z_test.go"},
	{`{"pattern":"**/*.{ts,tsx}","path":"src"}`, "src/deep/er/z.ts\nsrc/x.ts\nsrc/y.tsx"},
	{`{"pattern":"**/*_test.go","sort":"mtime","max_results":20}`, "src/deep/er/z_test.go\nmain_test.go"},
}

func TestExamples(t *testing.T) {
	tool, _ := newTool(t, "")
	schema, err := tools.CompileSchema(tool.Info().Parameters)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range examples {
		if err := schema.Validate([]byte(ex.call)); err != nil {
			t.Errorf("%s: schema: %v", ex.call, err)
		}
		res, err := tool.Call(context.Background(), json.RawMessage(ex.call))
		if err != nil || strings.TrimRight(res.Text, "\n") != ex.want {
			t.Errorf("%s: %v\n%s\nwant:\n%s", ex.call, err, res.Text, ex.want)
		}
	}
	for _, bad := range []string{`{}`, `{"pattern":"*","sort":"size"}`, `{"pattern":"*","max_results":"3"}`} {
		if err := schema.Validate([]byte(bad)); err == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}
