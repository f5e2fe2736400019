package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// TestExportOfASplitSecretReplays: a token the desk agent and its
// sub-agent stream split across chunks (3- and 4-rune text chunks, 4-byte
// argument fragments) is in no part of `ruleagent runs export`'s file,
// nor any 6 bytes of it, and `ruleagent replay` of that file reproduces
// the run's events.
func TestExportOfASplitSecretReplays(t *testing.T) {
	const token = "ghp_9Zy8Xw7Vu6Ts5Rq4Po3Nm2Lk1Ji0Hg9Fe8D"
	llm := llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains(promptDesk), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if len(r.ToolResults()) == 0 {
				return llmtest.Response{Text: "Passing " + token + " on.", ChunkSize: 3,
					ToolCalls: []llmtest.ToolCall{llmtest.Call("writer", `{"message":"use `+token+`"}`)}}
			}
			return llmtest.Response{Text: "Done, with " + token + ".", ChunkSize: 3}
		})},
		llmtest.Rule{Match: llmtest.SystemContains(promptWriter), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			return llmtest.Response{Text: "Dear customer, " + r.LastUserText(), ChunkSize: 4}
		})},
	))
	base := recordingServer(t, "bolt", deskChains(t), llm.URL)
	resp, err := http.Post(base+"/api/v1/chains/desk/run", "application/json", strings.NewReader(`{"input":"Pass the token on."}`))
	if err != nil {
		t.Fatal(err)
	}
	var ans struct{ RunID, Outcome, Data string }
	_ = json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	if ans.Outcome != "success" || !strings.Contains(ans.Data, "Done, with "+token+".") {
		t.Fatalf("the run: %+v", ans)
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"runs", "export", "--server", base, ans.RunID}, nil, &out, &errOut); code != 0 {
		t.Fatalf("runs export: %d %s", code, errOut.String())
	}
	for i := 0; i+6 <= len(token); i++ {
		if strings.Contains(out.String(), token[i:i+6]) {
			t.Fatalf("the export holds %q:\n%s", token[i:i+6], out.String())
		}
	}
	if !strings.Contains(out.String(), `"delta":"Dear"`) || !strings.Contains(out.String(), "[REDACTED]") {
		t.Fatalf("the export has no sub-agent chunks or no redaction:\n%s", out.String())
	}
	file := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	llm.Close()
	out.Reset()
	if code := run(context.Background(), []string{"replay", file}, nil, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "replayed "+ans.RunID+": the same ") {
		t.Fatalf("replay: %d %s %s", code, out.String(), errOut.String())
	}
}
