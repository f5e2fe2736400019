package edit

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// examples are the calls the documentation shows, one per operation, in
// order on one file. They must pass the schema check the wrapper applies,
// and then succeed.
var examples = []string{
	`{"operation":"line","path":"main.go","line_from":3,"line_to":3,"content":"func main() {"}`,
	`{"operation":"search","path":"main.go","search":"println(\"hi\")","replace":"println(\"hello\")"}`,
	`{"operation":"insert","path":"main.go","after":"func main() {","content":"\tdefer cleanup()"}`,
	`{"operation":"delete","path":"main.go","line_from":4,"line_to":4}`,
	`{"operation":"list_backups","path":"main.go"}`,
	`{"operation":"restore","path":"main.go"}`,
	`{"operation":"restore","path":"main.go","version":1}`,
}

func TestExamples(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main(){\n\tprintln(\"hi\")\n}\n")
	tl := newTool(t, dir, "")
	schema, err := tools.CompileSchema(tl.Info().Parameters)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range examples {
		if err := schema.Validate([]byte(ex)); err != nil {
			t.Errorf("%s: schema: %v", ex, err)
		}
		res, err := tl.Call(in("thread-1"), json.RawMessage(ex))
		if err != nil {
			t.Errorf("%s: %v", ex, err)
		}
		t.Logf("%s\n%s", ex, res.Text)
	}
	// The last restore brought back the original.
	if got := get(t, filepath.Join(dir, "main.go")); got != "package main\n\nfunc main(){\n\tprintln(\"hi\")\n}\n" {
		t.Errorf("after the examples: %q", got)
	}
	if err := schema.Validate([]byte(`{"path":"x"}`)); err == nil {
		t.Error("the schema must require operation")
	}
}
