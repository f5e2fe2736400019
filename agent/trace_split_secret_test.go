package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// TestTraceContentScrubsSecretsSplitAcrossChunks: with content captured,
// a registered secret and a token the model streams split across chunks
// (3-rune text and reasoning chunks, 4-byte argument fragments) are
// scrubbed from the spans, which record the answer and the arguments
// joined: no 6 bytes of either reach a span, and the spans say
// [REDACTED] where they were.
func TestTraceContentScrubsSecretsSplitAcrossChunks(t *testing.T) {
	const key = "zq9-plain-4471-kWv"
	const token = "ghp_9Zy8Xw7Vu6Ts5Rq4Po3Nm2Lk1Ji0Hg9Fe8D"
	exp := recordSpans(t, true)
	h := newHarness(t, llmtest.Sequence(
		llmtest.Response{Reasoning: "I hold " + token + ".", Text: "Adding with " + key + ".", ChunkSize: 3,
			ToolCalls: []llmtest.ToolCall{{ID: "call_add", Name: "add", Arguments: `{"a":2,"b":40,"note":"` + token + `"}`}}},
		llmtest.Response{Text: "Done: " + key + " and " + token + ".", ChunkSize: 3}))
	h.tools = []string{"add"}
	sc := scrub.New().Child()
	sc.AddSecrets(key)
	var rec events.Recorder
	out, err := h.agent().Run(context.Background(), Input{Messages: []events.Message{{Role: events.RoleUser, Content: "add"}},
		SystemPrompt: "You add.", Stream: true, Point: pointFor("adder"), Scrubber: sc}, &rec)
	if err != nil || out.Content != "Done: "+key+" and "+token+"." {
		t.Fatalf("run: %+v %v", out, err)
	}
	// The model's own text streams to its client as it said it, in chunks
	// none of which holds a secret whole.
	var deltas int
	for _, e := range rec.Events() {
		if e.Type == events.TextMessageContent {
			deltas++
			if strings.Contains(e.Delta, key) || strings.Contains(e.Delta, token) {
				t.Fatalf("a chunk holds a secret whole: %q", e.Delta)
			}
		}
	}
	if deltas < 10 {
		t.Fatalf("%d text chunks: the answer was not split", deltas)
	}
	var captured strings.Builder
	for _, s := range exp.GetSpans() {
		for _, kv := range s.Attributes {
			switch kv.Key {
			case "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments":
				v := kv.Value.AsString()
				for _, secret := range []string{key, token} {
					for i := 0; i+6 <= len(secret); i++ {
						if strings.Contains(v, secret[i:i+6]) {
							t.Fatalf("%s of %s holds %q: %s", kv.Key, s.Name, secret[i:i+6], v)
						}
					}
				}
				captured.WriteString(v)
			}
		}
	}
	for _, want := range []string{`"content":"I hold [REDACTED]."`, `"content":"Adding with [REDACTED]."`,
		`"note":"[REDACTED]"`, `"content":"Done: [REDACTED] and [REDACTED]."`} {
		if !strings.Contains(captured.String(), want) {
			t.Errorf("no span holds %s:\n%s", want, captured.String())
		}
	}
}
