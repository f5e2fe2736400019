package read

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// examples are the calls the documentation shows, one per operation, and
// what each returns. They must pass the schema check the wrapper applies,
// and then answer exactly that.
var examples = []struct{ call, want string }{
	{`{"operation":"file","path":"src/main.go","line_from":1,"line_to":40}`,
		"src/main.go (4 lines, 51 bytes)\n1\tpackage main\n2\t\n3\tfunc helloHandler() {}\n4\t// todo: more"},
	{`{"operation":"search","query":"func \\w+Handler","use_regex":true,"path":"src","pattern":"**/*.go"}`,
		"1 match for \"func \\w+Handler\" in src/ (1 file searched):\nsrc/main.go:3: func helloHandler() {}"},
	{`{"operation":"list","path":"src","recursive":true,"max_depth":2}`, "src/ (1 file, down to depth 2):\nmain.go (51 bytes)"},
	{`{"path":"src/main.go"}`, "src/main.go (4 lines, 51 bytes)\n1\tpackage main\n2\t\n3\tfunc helloHandler() {}\n4\t// todo: more"},
	{`{"query":"TODO","ignore_case":true}`, "1 match for \"TODO\" in the workspace (1 file searched):\nsrc/main.go:4: // todo: more"},
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
		if err := schema.Validate([]byte(ex.call)); err != nil {
			t.Errorf("%s: schema: %v", ex.call, err)
		}
		res, err := tl.Call(context.Background(), json.RawMessage(ex.call))
		if err != nil || strings.TrimRight(res.Text, "\n") != ex.want {
			t.Errorf("%s: %v\n%s\nwant:\n%s", ex.call, err, res.Text, ex.want)
		}
	}
	if err := schema.Validate([]byte(`{"operation":"grep"}`)); err == nil {
		t.Error("the schema must refuse an unknown operation")
	}
}
