package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/server"
)

// finish ends the transcript: what is still queued; then the chain's
// result (its message data, JSON indented) when that is not the answer
// already streamed, as for a chain that is not an agent; then one line
// about the run: the result's relation, the model, steps, tool calls,
// tokens and, when the ledger has prices, its cost; with showMeta, the result's metadata on a line of its own.
func (t *terminal) finish(res server.RunResult, err error, showMeta bool) {
	t.status.close()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.drain()
	if err != nil {
		return
	}
	md := types.NewMetadata()
	if res.Msg.Metadata != nil {
		md = res.Msg.Metadata
	}
	var parts []string
	if data := strings.TrimSpace(res.Msg.GetData()); data != "" && data != strings.TrimSpace(t.answer.String()) {
		t.out(resultText(data) + "\n")
		if res.Relation != "" {
			parts = append(parts, "relation "+res.Relation)
		}
	}
	if m := md.GetValue("model"); m != "" {
		parts = append(parts, "model "+m)
	}
	if s := md.GetValue("steps"); s != "" {
		parts = append(parts, count(s, "step"))
	}
	if c := md.GetValue("toolCalls"); c != "" {
		parts = append(parts, count(c, "tool call"))
	}
	if p := md.GetValue("promptTokens"); p != "" {
		parts = append(parts, fmt.Sprintf("tokens %s in / %s out (%s total)", p, md.GetValue("completionTokens"), md.GetValue("totalTokens")))
	}
	if md.GetValue("truncated") == "true" {
		parts = append(parts, "answer forced at maxStep")
	}
	if res.Cost != "" {
		// Priced by the ledger (--prices), as its RUN_FINISHED says.
		parts = append(parts, "cost "+res.Cost+" "+res.Currency)
	}
	if len(parts) > 0 {
		t.out(t.paint(dim, "— "+strings.Join(parts, " · ")) + "\n")
	}
	if showMeta {
		b, _ := json.Marshal(md.Values())
		t.out(t.paint(dim, "— metadata ") + string(b) + "\n")
	}
}

// resultText is a chain's result for a person: JSON indented, anything
// else as it is.
func resultText(data string) string {
	if data[0] != '{' && data[0] != '[' {
		return data
	}
	var b bytes.Buffer
	if json.Indent(&b, []byte(data), "", "  ") != nil {
		return data
	}
	return b.String()
}
