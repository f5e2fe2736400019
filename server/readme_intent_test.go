package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// The README's ai/intent example deploys as written and routes: a refund
// request reaches the refunds branch, anything else leaves by Other.
func TestREADMEIntentExample(t *testing.T) {
	sec := readmeSection(t, "## The ai/intent node")
	start := strings.Index(sec, "```json\n")
	end := strings.Index(sec[start+8:], "```")
	if start < 0 || end < 0 {
		t.Fatal("no JSON example")
	}
	dsl := sec[start+8 : start+8+end]
	llm := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if strings.Contains(r.LastUserText(), "money") {
			return llmtest.Reply("refund")
		}
		return llmtest.Reply("Other")
	}))
	st, errs := OpenStore("", NewConfig(map[string]string{"llm_url": llm.URL, "model": "m"}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	defer st.Close()
	if _, err := st.Save("support-router", []byte(dsl)); err != nil {
		t.Fatalf("the README's example does not deploy: %v", err)
	}
	res, err := st.Run(t.Context(), RunRequest{ChainID: "support-router", Input: "I want my money back"})
	if err != nil || res.Relation != "Success" || !strings.Contains(res.Msg.GetData(), `"team":"refunds"`) {
		t.Fatalf("refund: %v %s %s", err, res.Relation, res.Msg.GetData())
	}
	res, err = st.Run(t.Context(), RunRequest{ChainID: "support-router", Input: "hello"})
	if err != nil || res.Relation != "Other" || res.Msg.Metadata.GetValue("intent") != "Other" {
		b, _ := json.Marshal(res)
		t.Fatalf("other: %v %s", err, b)
	}
}
