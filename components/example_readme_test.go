package components_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// goExample marks a README code block as the source of an example file:
// the block is that file without its package clause.
var goExample = regexp.MustCompile("(?m)^<!-- go-example: (\\S+) -->\n```go\n((?s:.*?))\n```\n")

// TestREADMEGoSnippets: each Go block of the README's Embedding in Go and
// Aspects sections is an example file of this package, compiled and run
// (against its // Output:) by go test, and equal to it, so the README's
// Go cannot drift from code that works.
func TestREADMEGoSnippets(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, m := range goExample.FindAllSubmatch(readme, -1) {
		path := string(m[1])
		files = append(files, path)
		src, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(path)))
		if err != nil {
			t.Fatalf("the README shows %s: %v", path, err)
		}
		_, body, _ := strings.Cut(string(src), "\n")
		if want := strings.Trim(body, "\n"); string(m[2]) != want {
			t.Errorf("the README's block for %s differs from the file; the file is:\n%s", path, want)
		}
	}
	want := []string{"components/example_agent_test.go", "components/example_tool_test.go", "components/example_aspect_test.go"}
	slices.Sort(files)
	slices.Sort(want)
	if !slices.Equal(files, want) {
		t.Fatalf("the README shows %v, want %v", files, want)
	}
	for _, section := range []string{"## Embedding in Go\n", "## Aspects\n"} {
		text := string(readme)
		i := strings.Index(text, section)
		if i < 0 {
			t.Fatalf("no section %q", section)
		}
		text = text[i+len(section):]
		if j := strings.Index(text, "\n## "); j >= 0 {
			text = text[:j]
		}
		if blocks, shown := strings.Count(text, "```go\n"), len(goExample.FindAllString(text, -1)); blocks != shown {
			t.Errorf("%s has %d Go blocks, %d of them example files: every one must be", strings.TrimSpace(section), blocks, shown)
		}
	}
}
