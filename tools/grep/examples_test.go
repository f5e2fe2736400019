package grep

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
	{`{"pattern":"func \\w+\\(","include":"*.go"}`,
		"main.go:3: func main() {\nutil.go:4: func Hello() string { return \"Hello\" }\n[3 files searched]"},
	{`{"pattern":"Hello()","literal":true,"path":"util.go"}`, "util.go:4: func Hello() string { return \"Hello\" }"},
	{`{"pattern":"hello","path":"docs","context":1,"ignore_case":true}`,
		"docs/readme.md:1: Say hello.\ndocs/readme.md-2- line 2\n--\ndocs/readme.md-4- line 4\ndocs/readme.md:5: hello again\ndocs/readme.md-6- line 6\n[2 files searched]"},
	{`{"pattern":"hello","output_mode":"files_with_matches","exclude":"vendor","max_results":10}`,
		"crlf.txt\ndocs/readme.md\nmain.go\nutil.go\n[6 files searched; 1 binary file skipped; 1 file over 1.0 KiB skipped]"},
	{`{"pattern":"hello","output_mode":"count"}`,
		"crlf.txt:1\ndocs/readme.md:2\nmain.go:1\nutil.go:1\nvendor/lib/x.go:1\nvendor/lib/y.txt:1\n[8 files searched; 1 binary file skipped; 1 file over 1.0 KiB skipped]"},
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
	for _, bad := range []string{`{}`, `{"pattern":"x","output_mode":"lines"}`, `{"pattern":"x","context":"2"}`} {
		if err := schema.Validate([]byte(bad)); err == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}
