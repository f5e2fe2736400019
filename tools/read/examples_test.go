package read

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// examples are the calls the documentation shows, one per operation. They
// must pass the schema check the wrapper applies, and then succeed.
var examples = []string{
	`{"operation":"file","path":"src/main.go","line_from":1,"line_to":40}`,
	`{"operation":"search","query":"func \\w+Handler","use_regex":true,"path":"src","pattern":"**/*.go"}`,
	`{"operation":"list","path":"src","recursive":true,"max_depth":2}`,
	`{"path":"src/main.go"}`,
	`{"query":"TODO","ignore_case":true}`,
}

func TestExamples(t *testing.T) {
	f := newFixture(t)
	f.file(t, "src/main.go", "package main\n\nfunc helloHandler() {}\n// todo: more\n")
	tl := f.tool(t, "")
	schema, err := tools.CompileSchema(tl.Info().Parameters)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range examples {
		if err := schema.Validate([]byte(ex)); err != nil {
			t.Errorf("%s: schema: %v", ex, err)
		}
		res, err := tl.Call(context.Background(), json.RawMessage(ex))
		if err != nil {
			t.Errorf("%s: %v", ex, err)
		}
		t.Logf("%s\n%s", ex, res.Text)
	}
	if err := schema.Validate([]byte(`{"operation":"grep"}`)); err == nil {
		t.Error("the schema must refuse an unknown operation")
	}
}
