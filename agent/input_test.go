package agent

import (
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/events"
)

func TestParseInput(t *testing.T) {
	cases := []struct {
		in      string
		n       int
		last    string
		role    events.Role
		wantErr string
	}{
		{in: "hello", n: 1, last: "hello", role: "user"},
		{in: "  {not json", n: 1, last: "  {not json", role: "user"},
		{in: `{"message":"hi there"}`, n: 1, last: "hi there", role: "user"},
		{in: `{"foo":1}`, n: 1, last: `{"foo":1}`, role: "user"},
		{in: `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"q"}]}`, n: 2, last: "q", role: "user"},
		{in: `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`, n: 3, last: "r", role: "tool"},
		{in: `{"messages":[{"id":"m1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"id":"m2","role":"tool","toolCallId":"c1","content":"r"}]}`, n: 2, last: "r", role: "tool"},
		{in: `{"messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`, n: 1, last: "look", role: "user"},
		{in: `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"data","value":"AAAA","mimeType":"image/png"}}]}]}`, n: 1, last: "", role: "user"},
		{in: "", wantErr: "empty"},
		{in: `{"message":"  "}`, wantErr: "empty"},
		{in: `{"messages":[]}`, wantErr: "empty"},
		{in: `{"messages":[{"content":"x"}]}`, wantErr: "missing role"},
		{in: `{"messages":[{"role":"wizard","content":"x"}]}`, wantErr: "unsupported role"},
		{in: `{"messages":[{"role":"tool","content":"x"}]}`, wantErr: "tool_call_id"},
		{in: `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"/etc/passwd"}}]}]}`, wantErr: "http(s) URL"},
		{in: `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"file:///etc/passwd"}}]}]}`, wantErr: "http(s) URL"},
		{in: `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"arguments":"{}"}}]}]}`, wantErr: "function name"},
	}
	for _, c := range cases {
		msgs, err := ParseInput([]byte(c.in))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err %v, want %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || len(msgs) != c.n || msgs[len(msgs)-1].Content != c.last || msgs[len(msgs)-1].Role != c.role {
			t.Errorf("%s: %+v %v", c.in, msgs, err)
		}
	}
	msgs, _ := ParseInput([]byte(`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"data","value":"AAAA","mimeType":"image/png"}}]}]}`))
	if p := msgs[0].Parts; len(p) != 1 || p[0].URL != "data:image/png;base64,AAAA" {
		t.Fatalf("AG-UI data image: %+v", p)
	}
}
