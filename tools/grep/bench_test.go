package grep

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// BenchmarkGrep searches a tree of 200 Go-like files of 500 lines (about
// 5 MiB) for a rare literal, a regular expression, and in files mode.
func BenchmarkGrep(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := range 500 {
		fmt.Fprintf(&sb, "\tresult%d := compute(ctx, input[%d], options) // step %d of the pipeline\n", i, i, i)
	}
	body := sb.String()
	for f := range 200 {
		p := filepath.Join(dir, fmt.Sprintf("pkg%02d", f%20), fmt.Sprintf("file%03d.go", f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		content := body
		if f == 150 {
			content += "\tneedle := 42\n"
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	tool, err := New(tools.BuildContext{WorkDir: dir}, json.RawMessage(`{"maxResults": 10000}`))
	if err != nil {
		b.Fatal(err)
	}
	defer tool.(*Tool).Close()
	for _, c := range []struct{ name, args string }{
		{"rare_literal", `{"pattern": "needle", "literal": true}`},
		{"regex", `{"pattern": "result4[0-9]9 :=", "max_results": 10000}`},
		{"files_mode", `{"pattern": "compute\\(", "output_mode": "files_with_matches", "max_results": 10000}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := tool.Call(context.Background(), json.RawMessage(c.args)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
