package skill

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// TestExamples checks the documented call against the schema the wrapper
// applies, and what it and the system prompt say.
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
	want := "# Skill: release-notes\n\nDirectory: " + filepath.Join(f.ws, "skills", "release-notes") + " (in the workspace: skills/release-notes)\n" +
		"Allowed tools: bash, read\n\n# Release notes\n\n1. Run git log."
	if got := strings.TrimRight(res.Text, "\n"); got != want {
		t.Errorf("%s:\n%s\nwant:\n%s", ex, got, want)
	}
	prompt := tl.SystemPrompt(context.Background())
	if !strings.HasPrefix(prompt, "## Skills\n") || !strings.Contains(prompt, "call the `skill` tool with {\"skill\": \"<name>\"}") ||
		!strings.HasSuffix(strings.TrimRight(prompt, "\n"), "Available skills:\n- release-notes: Write release notes from the git log.") {
		t.Errorf("system prompt:\n%s", prompt)
	}
	for _, bad := range []string{`{}`, `{"skill":1}`, `{"skill":"x","path":"y"}`} {
		if err := schema.Validate([]byte(bad)); err == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}
