package server

import (
	"strings"
	"testing"
)

func evList(s string) [][]byte {
	var out [][]byte
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		out = append(out, []byte(strings.TrimSpace(l)))
	}
	return out
}

// A run with two parallel tool calls, one of them a sub-agent.
const recordedRun = `
{"type":"RUN_STARTED","timestamp":1,"threadId":"t1","runId":"r1"}
{"type":"TEXT_MESSAGE_START","timestamp":2,"messageId":"r1-msg-1","role":"assistant"}
{"type":"TEXT_MESSAGE_CONTENT","timestamp":2,"messageId":"r1-msg-1","delta":"Hi"}
{"type":"TEXT_MESSAGE_END","timestamp":2,"messageId":"r1-msg-1"}
{"type":"TOOL_CALL_START","timestamp":3,"toolCallId":"call_1","toolCallName":"lookup","parentMessageId":"r1-msg-1"}
{"type":"TOOL_CALL_START","timestamp":3,"toolCallId":"call_2","toolCallName":"helper","parentMessageId":"r1-msg-1"}
{"type":"STEP_STARTED","timestamp":4,"stepName":"js","metadata":{"toolCallId":"call_1","nodeId":"js"}}
{"type":"SUBAGENT_STARTED","timestamp":4,"subagentRunId":"sub-a","name":"Helper","parentToolCallId":"call_2"}
{"type":"TEXT_MESSAGE_CONTENT","timestamp":5,"messageId":"sub-a-msg-1","delta":"help","subagentRunId":"sub-a"}
{"type":"STEP_FINISHED","timestamp":5,"stepName":"js","metadata":{"toolCallId":"call_1","nodeId":"js","durationMs":3}}
{"type":"TOOL_CALL_RESULT","timestamp":6,"messageId":"r1-tool-1","toolCallId":"call_1","content":"A"}
{"type":"SUBAGENT_FINISHED","timestamp":7,"subagentRunId":"sub-a","result":"help"}
{"type":"TOOL_CALL_RESULT","timestamp":7,"messageId":"r1-tool-2","toolCallId":"call_2","content":"help"}
{"type":"CUSTOM","timestamp":8,"name":"ruleagent.llm_retry","value":{"attempt":1,"delayMs":512}}
{"type":"RUN_FINISHED","timestamp":9,"threadId":"t1","runId":"r1","result":"done","metadata":{"durationMs":9}}`

func TestCompareEvents(t *testing.T) {
	replace := func(pairs ...string) string { return strings.NewReplacer(pairs...).Replace(recordedRun) }
	// The parallel calls finished in the other order.
	lines := strings.Split(strings.TrimSpace(recordedRun), "\n")
	swapped := append([]string(nil), lines...)
	swapped[10], swapped[11], swapped[12] = lines[11], lines[12], lines[10]
	moved := append([]string(nil), lines...)
	moved[12], moved[13] = lines[13], lines[12]
	for _, c := range []struct {
		name, replay string
		field        string // "" for the same
		index        int
	}{
		{"the run itself", recordedRun, "", 0},
		{"new ids and times", replace(`"r1`, `"r9`, `"t1"`, `"t9"`, `sub-a`, `sub-b`, `"timestamp":`, `"timestamp":10`, `"durationMs":3`, `"durationMs":4`,
			`"delayMs":512`, `"delayMs":700`), "", 0},
		{"parallel calls in another order", strings.Join(swapped, "\n"), "", 0},
		{"a delta that differs", replace(`"delta":"Hi"`, `"delta":"Ho"`), "delta", 2},
		{"a sub-agent's delta that differs", replace(`"delta":"help"`, `"delta":"hello"`), "delta", 8},
		{"two ids made one", replace(`"r1-tool-2"`, `"r1-tool-1"`), "messageId", 12},
		{"an id that is not the same one", replace(`"messageId":"r1-msg-1","delta"`, `"messageId":"r1-msg-2","delta"`), "messageId", 2},
		{"a call's result after the run's next event", strings.Join(moved, "\n"), "(its place)", 12},
		{"metadata that differs", replace(`"nodeId":"js","durationMs":3`, `"nodeId":"other","durationMs":3`), "metadata.nodeId", 9},
		{"an event less", strings.Join(lines[:len(lines)-1], "\n"), "(missing)", 14},
		{"an event more", recordedRun + "\n" + `{"type":"STEP_STARTED","stepName":"x"}`, "(extra)", 15},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := CompareEvents(evList(recordedRun), evList(c.replay))
			switch {
			case c.field == "" && d != nil:
				t.Fatalf("a difference: %s", d)
			case c.field != "" && d == nil:
				t.Fatalf("no difference, want %s", c.field)
			case c.field != "" && (d.Field != c.field || d.Index != c.index):
				t.Fatalf("got %s, want %s at %d", d, c.field, c.index)
			}
		})
	}
}
