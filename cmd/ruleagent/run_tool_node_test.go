package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// TestToolEventsNameTheirAgentNode: two agents of one chain have a tool of
// the same name; each TOOL_CALL_START and TOOL_CALL_RESULT says which agent
// node made the call (metadata chainId and nodeId), so that a client such
// as the editor lights the tool of the right agent; the stream stays
// valid for the real @ag-ui/client.
func TestToolEventsNameTheirAgentNode(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if res := r.ToolResults(); len(res) > 0 {
			return llmtest.Reply("looked up: " + res[0].Content)
		}
		return llmtest.Calls(llmtest.Call("lookup", `{"sku":"X-1"}`))
	}))
	setLLM(t, srv.URL)
	dir := t.TempDir()
	agent := func(id string) string {
		return `{"id": "` + id + `", "type": "ai/agent", "name": "Agent ` + id + `", "configuration": {
		  "url": "${global.llm_url}", "key": "${global.api_key}", "model": "${global.model}", "systemPrompt": "You are agent ` + id + `.",
		  "tools": [{"type": "rulechain", "name": "lookup", "targetId": "stock"}]}}`
	}
	files := map[string]string{
		"pair.json": `{"ruleChain": {"id": "pair", "name": "Pair"}, "metadata": {"nodes": [` + agent("first") + `, ` + agent("second") + `],
		  "connections": [{"fromId": "first", "toId": "second", "type": "Success"}]}}`,
		"stock.json": `{"ruleChain": {"id": "stock", "name": "Stock"}, "metadata": {"nodes": [{"id": "n", "type": "jsTransform", "name": "Count",
		  "configuration": {"jsScript": "return {msg: {sku: msg.sku, left: 3}, metadata: metadata, msgType: msgType};"}}]}}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"run", filepath.Join(dir, "pair.json"), "--input", "how many X-1?", "--json"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var events [][]byte
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		events = append(events, []byte(line))
		switch typ := gjson.Get(line, "type").String(); typ {
		case "TOOL_CALL_START", "TOOL_CALL_RESULT":
			got = append(got, typ+" "+gjson.Get(line, "toolCallName").String()+" "+gjson.Get(line, "metadata.chainId").String()+"/"+gjson.Get(line, "metadata.nodeId").String())
		}
	}
	want := []string{"TOOL_CALL_START lookup pair/first", "TOOL_CALL_RESULT  pair/first", "TOOL_CALL_START lookup pair/second", "TOOL_CALL_RESULT  pair/second"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("tool events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	aguicheck.CheckStream(t, events)
}
