package demo

import (
	"encoding/json"
	"strings"
	"testing"
)

func req(t *testing.T, body string) *Request {
	t.Helper()
	var r Request
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

const (
	orderTool = `{"type":"function","function":{"name":"get_order_status","description":"Look up the shipping status of one of the customer's orders by its order id (such as A-1001).",` +
		`"parameters":{"type":"object","properties":{"orderId":{"type":"string","description":"The order number."}},"required":["orderId"]}}}`
	subAgentParams = `{"type":"object","properties":{"message":{"type":"string"},"messages":{"type":"array","items":{"type":"object"}}}}`
	reviewer       = `{"type":"function","function":{"name":"Code_Reviewer","description":"Reviews a piece of code or a diff: correctness, edge cases, readability.","parameters":` + subAgentParams + `}}`
	summarizer     = `{"type":"function","function":{"name":"Summarizer","description":"Summarizes a text in a few bullet points.","parameters":` + subAgentParams + `}}`
	themeTool      = `{"type":"function","function":{"name":"set_theme","description":"Switch the page's colour theme.",` +
		`"parameters":{"type":"object","properties":{"theme":{"type":"string","enum":["light","dark"]}},"required":["theme"]}}}`
	listChains = `{"type":"function","function":{"name":"chains__list_rule_chains","description":"Lists the deployed rule chains: id, name, description, whether each is an agent, and the MCP tool that runs it.","parameters":{"type":"object","properties":{}}}}`
	getChain   = `{"type":"function","function":{"name":"chains__get_rule_chain","description":"Returns a deployed rule chain's definition (its DSL JSON).",` +
		`"parameters":{"type":"object","properties":{"id":{"type":"string","description":"The chain id, as list_rule_chains gives it."}},"required":["id"]}}}`
)

func user(text string) string {
	b, _ := json.Marshal(text)
	return `{"role":"user","content":` + string(b) + `}`
}

func TestDecideCallsTheToolTheMessageNames(t *testing.T) {
	tests := []struct {
		name, tools, text string
		want              []string // name and arguments of each call
	}{
		{"an order id fills the required argument", orderTool, "Where is my order A-1001?", []string{`get_order_status {"orderId":"A-1001"}`}},
		{"matching sub-agents are called together", reviewer + "," + summarizer, "Review this loop and summarise the notes: for i := 0; i < n-1; i++ {}",
			[]string{`Code_Reviewer {"message":"Review this loop and summarise the notes: for i := 0; i \u003c n-1; i++ {}"}`,
				`Summarizer {"message":"Review this loop and summarise the notes: for i := 0; i \u003c n-1; i++ {}"}`}},
		{"one matching sub-agent alone", reviewer + "," + summarizer, "Please review: x := 1", []string{`Code_Reviewer {"message":"Please review: x := 1"}`}},
		{"an agent of sub-agents only delegates anything", reviewer + "," + summarizer, "What do you think of Go?",
			[]string{`Code_Reviewer {"message":"What do you think of Go?"}`, `Summarizer {"message":"What do you think of Go?"}`}},
		{"an enum value named in the message", themeTool + "," + orderTool, "Switch to the dark theme, please", []string{`set_theme {"theme":"dark"}`}},
		{"a tool without arguments", listChains + "," + getChain, "Which chains are deployed?", []string{`chains__list_rule_chains {}`}},
		{"a filled id outweighs more shared words", listChains + "," + getChain, "Describe the support-agent chain", []string{`chains__get_rule_chain {"id":"support-agent"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Decide(req(t, `{"messages":[{"role":"system","content":"You help."},`+user(tt.text)+`],"tools":[`+tt.tools+`]}`))
			var got []string
			for _, c := range a.ToolCalls {
				got = append(got, c.Name+" "+c.Arguments)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("calls\n%s\nwant\n%s\n(text %q)", strings.Join(got, "\n"), strings.Join(tt.want, "\n"), a.Text)
			}
			if a.FinishReason != "tool_calls" || !strings.HasPrefix(a.Text, Marker+" Calling ") || a.Reasoning == "" {
				t.Errorf("finish %q text %q reasoning %q", a.FinishReason, a.Text, a.Reasoning)
			}
			ids := map[string]bool{}
			for _, c := range a.ToolCalls {
				if c.ID == "" || ids[c.ID] {
					t.Errorf("call ids %+v", a.ToolCalls)
				}
				ids[c.ID] = true
			}
			if again := Decide(req(t, `{"messages":[{"role":"system","content":"You help."},`+user(tt.text)+`],"tools":[`+tt.tools+`]}`)); again.ToolCalls[0].ID != a.ToolCalls[0].ID {
				t.Errorf("not deterministic: %s then %s", a.ToolCalls[0].ID, again.ToolCalls[0].ID)
			}
		})
	}
}

func TestDecideExplainsWhenNoToolFits(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"no tools", `{"messages":[{"role":"system","content":"You are a helpful assistant."},` + user("What is a rule chain?") + `]}`, "A scripted reply to “What is a rule chain?”, in the role “You are a helpful assistant.”"},
		{"no tool shares a word", `{"messages":[` + user("Hello there") + `],"tools":[` + orderTool + `]}`, "None of this agent's tools (get_order_status: Look up"},
		{"a required argument is missing", `{"messages":[` + user("Where is my order?") + `],"tools":[` + orderTool + `]}`, "get_order_status fits your message but needs orderId"},
		{"tool_choice none", `{"messages":[` + user("Where is my order A-1001?") + `],"tools":[` + orderTool + `],"tool_choice":"none"}`, "A scripted reply to “Where is my order A-1001?”"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Decide(req(t, tt.body))
			if len(a.ToolCalls) != 0 || a.FinishReason != "stop" {
				t.Fatalf("calls %+v finish %q", a.ToolCalls, a.FinishReason)
			}
			if !strings.HasPrefix(a.Text, Marker+" ") || !strings.Contains(a.Text, tt.want) || !strings.Contains(a.Text, "OPENAI_BASE_URL") {
				t.Errorf("text %q, want it to hold %q", a.Text, tt.want)
			}
		})
	}
}

func TestDecideReportsToolResults(t *testing.T) {
	body := `{"messages":[` + user("Where is my order A-1001?") + `,
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_order_status","arguments":"{\"orderId\":\"A-1001\"}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"{\"carrier\":\"DHL\",\"found\":true,\"orderId\":\"A-1001\",\"status\":\"shipped\"}"}],"tools":[` + orderTool + `]}`
	a := Decide(req(t, body))
	want := Marker + " get_order_status answered: carrier DHL, found true, orderId A-1001, status shipped."
	if len(a.ToolCalls) != 0 || !strings.HasPrefix(a.Text, want) {
		t.Fatalf("text %q calls %+v, want it to start %q", a.Text, a.ToolCalls, want)
	}
	two := `{"messages":[` + user("Review and summarise") + `,
		{"role":"assistant","content":"x","tool_calls":[{"id":"a","type":"function","function":{"name":"Code_Reviewer","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"Summarizer","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"a","content":"[demo model] Looks fine."},{"role":"tool","tool_call_id":"b","content":"Error (approval_denied): a person denied the call"}]}`
	a = Decide(req(t, two))
	for _, w := range []string{"2 tool results:", "- Code_Reviewer answered: “Looks fine.”", "- Summarizer failed: (approval_denied): a person denied the call"} {
		if !strings.Contains(a.Text, w) {
			t.Errorf("text %q lacks %q", a.Text, w)
		}
	}
	// Results of an earlier question do not answer a new one.
	later := `{"messages":[` + user("first") + `,{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_order_status","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"{}"},{"role":"assistant","content":"done"},` + user("Where is order B-2001?") + `],"tools":[` + orderTool + `]}`
	if a := Decide(req(t, later)); len(a.ToolCalls) != 1 || a.ToolCalls[0].Arguments != `{"orderId":"B-2001"}` {
		t.Errorf("a new question after results: %+v %q", a.ToolCalls, a.Text)
	}
}

// classifier is ai/intent's prompt (components.intentPrompt).
const classifier = "Classify the user's message into exactly one of these intents. Answer with the intent's name only, nothing else.\n\n" +
	"- shipping: where an order is, or when it arrives\n- refund: the customer wants their money back for an order\n- Other: none of the above\n"

func TestDecideClassifiesIntents(t *testing.T) {
	for text, want := range map[string]string{
		"Where is my order A-1001?":  "shipping",
		"Please refund order A-1002": "refund",
		"I want my money back":       "refund",
		"Tell me a joke":             "Other",
		"order":                      "Other", // a tie
	} {
		a := Decide(req(t, `{"messages":[{"role":"system","content":`+mustJSON(classifier)+`},`+user(text)+`],"temperature":0}`))
		if a.Text != want || len(a.ToolCalls) != 0 {
			t.Errorf("%q: %q, want %q", text, a.Text, want)
		}
	}
}

func TestDecideAnswersJSONWhenAsked(t *testing.T) {
	a := Decide(req(t, `{"messages":[`+user("Hi")+`],"response_format":{"type":"json_object"}}`))
	var obj map[string]any
	if err := json.Unmarshal([]byte(a.Text), &obj); err != nil || obj["model"] != Model || !strings.HasPrefix(obj["answer"].(string), Marker) {
		t.Fatalf("json_object answer %q (%v)", a.Text, err)
	}
	a = Decide(req(t, `{"messages":[`+user("I feel great")+`],"response_format":{"type":"json_schema","json_schema":{"name":"mood","schema":`+
		`{"type":"object","properties":{"mood":{"enum":["sad","great"]},"score":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"ok":{"type":"boolean"}},"required":["mood"]}}}}`))
	if a.Text != `{"mood":"great","ok":false,"score":0,"tags":["[demo model] tags"]}` {
		t.Fatalf("json_schema answer %s", a.Text)
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestWordsAndIDs(t *testing.T) {
	if got := strings.Join(words("Look up get_order_status by orderId for THE customer's orders"), " "); got != "look order status customer orders" {
		t.Errorf("words: %q", got)
	}
	if got := strings.Join(ids("Order A-1001, chain support-agent, 42 items, INV42"), " "); got != "A-1001 support-agent INV42" {
		t.Errorf("ids: %q", got)
	}
	for _, p := range [][2]string{{"review", "reviews"}, {"summarise", "summarizes"}, {"list", "lists"}, {"chain", "chains"}} {
		if !same(p[0], p[1]) {
			t.Errorf("%s and %s should match", p[0], p[1])
		}
	}
	for _, p := range [][2]string{{"set", "settings"}, {"order", "ordinal"}, {"is", "issue"}} {
		if same(p[0], p[1]) {
			t.Errorf("%s and %s should not match", p[0], p[1])
		}
	}
}

func TestDecideCallsAToolNamedByItsName(t *testing.T) {
	a := Decide(req(t, `{"messages":[`+user("call get_order_status for A-1002")+`],"tools":[`+listChains+","+orderTool+`]}`))
	if len(a.ToolCalls) != 1 || a.ToolCalls[0].Name != "get_order_status" || a.ToolCalls[0].Arguments != `{"orderId":"A-1002"}` {
		t.Fatalf("calls %+v", a.ToolCalls)
	}
}

func TestResultLineShowsListsByTheirIDs(t *testing.T) {
	got := resultLine(toolResult{Name: "chains__list_rule_chains", Content: `{"chains":[{"id":"assistant","name":"Assistant"},{"id":"orchestrator"}],"ruleChain":{"id":"x","name":"X"},"n":[1,2],` +
		`"metadata":{"nodes":[{"id":"agent"}],"firstNodeIndex":0,"deep":{"a":{"b":1}}}}`})
	if want := `chains__list_rule_chains answered: chains (2) assistant, orchestrator, metadata {deep {"a":{"b":1}}, firstNodeIndex 0, nodes (1) agent}, n [1,2], ruleChain x.`; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}
