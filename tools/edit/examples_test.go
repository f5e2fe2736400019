package edit

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// examples are the calls the documentation shows, one per operation, in
// order on one file. They must pass the schema check the wrapper applies,
// and then succeed.
var examples = []struct{ call, want string }{
	{`{"operation":"line","path":"main.go","line_from":3,"line_to":3,"content":"func main() {"}`,
		"replaced line 3 with 1 line in main.go (backup v1); lines 1-5 now read:\n1\tpackage main\n2\t\n3\tfunc main() {\n4\t\tprintln(\"hi\")\n5\t}"},
	{`{"operation":"search","path":"main.go","search":"println(\"hi\")","replace":"println(\"hello\")"}`,
		"replaced 1 occurrence in main.go (backup v2); lines 2-5 now read:\n2\t\n3\tfunc main() {\n4\t\tprintln(\"hello\")\n5\t}"},
	{`{"operation":"insert","path":"main.go","after":"func main() {","content":"\tdefer cleanup()"}`,
		"inserted 1 line after line 3 in main.go (backup v3); lines 2-6 now read:\n2\t\n3\tfunc main() {\n4\t\tdefer cleanup()\n5\t\tprintln(\"hello\")\n6\t}"},
	{`{"operation":"delete","path":"main.go","line_from":4,"line_to":4}`,
		"deleted line 4 in main.go (backup v4); lines 2-5 now read:\n2\t\n3\tfunc main() {\n4\t\tprintln(\"hello\")\n5\t}"},
	{`{"operation":"list_backups","path":"main.go"}`,
		"backups of main.go in this session, newest first (restore takes the newest unless you give version):\n" +
			"v4  TIME  65 bytes\nv3  TIME  48 bytes\nv2  TIME  45 bytes\nv1  TIME  44 bytes"},
	{`{"operation":"restore","path":"main.go"}`, "restored main.go to backup v4 (65 bytes); its previous content is now backup v5"},
	{`{"operation":"restore","path":"main.go","version":1}`, "restored main.go to backup v1 (44 bytes); its previous content is now backup v6"},
}

// backupTime matches the time a backup lists.
var backupTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

func TestExamples(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main(){\n\tprintln(\"hi\")\n}\n")
	tl := newTool(t, dir, "")
	schema, err := tools.CompileSchema(tl.Info().Parameters)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range examples {
		if err := schema.Validate([]byte(ex.call)); err != nil {
			t.Errorf("%s: schema: %v", ex.call, err)
		}
		res, err := tl.Call(in("thread-1"), json.RawMessage(ex.call))
		if got := backupTime.ReplaceAllString(strings.TrimRight(res.Text, "\n"), "TIME"); err != nil || got != ex.want {
			t.Errorf("%s: %v\n%s\nwant:\n%s", ex.call, err, got, ex.want)
		}
	}
	// The last restore brought back the original.
	if got := get(t, filepath.Join(dir, "main.go")); got != "package main\n\nfunc main(){\n\tprintln(\"hi\")\n}\n" {
		t.Errorf("after the examples: %q", got)
	}
	if err := schema.Validate([]byte(`{"path":"x"}`)); err == nil {
		t.Error("the schema must require operation")
	}
}
