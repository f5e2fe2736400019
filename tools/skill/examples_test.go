package skill

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// TestExamples checks the documented call against the schema the wrapper
// applies, and that it succeeds.
func TestExamples(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.ws, "skills", "release-notes", "SKILL.md"),
		"---\nname: release-notes\ndescription: Write release notes from the git log.\nallowed-tools: [bash, read]\n---\n# Release notes\n\n1. Run git log.\n")
	tl := f.tool(t, `{}`)
	schema, err := tools.CompileSchema(tl.Info().Parameters)
	if err != nil {
		t.Fatal(err)
	}
	ex := `{"skill":"release-notes"}`
	if err := schema.Validate([]byte(ex)); err != nil {
		t.Fatalf("%s: schema: %v", ex, err)
	}
	res, err := tl.Call(context.Background(), json.RawMessage(ex))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s\n%s\nsystem prompt:\n%s", ex, res.Text, tl.SystemPrompt(context.Background()))
	for _, bad := range []string{`{}`, `{"skill":1}`, `{"skill":"x","path":"y"}`} {
		if err := schema.Validate([]byte(bad)); err == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}
