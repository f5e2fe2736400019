package components

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/sessions"
)

func sessionConfig(st sessions.Store) types.Config {
	cfg := rulego.NewConfig()
	RegisterSessions(&cfg, st)
	return cfg
}

func TestSessionConfigErrorsNameTheField(t *testing.T) {
	cases := []struct {
		session map[string]any
		field   string
	}{
		{map[string]any{"scope": "room"}, "session.scope"},
		{map[string]any{"scope": "thread", "colour": "red"}, `session.colour: unknown field`},
		{map[string]any{"scope": "thread", "memory": "some"}, "session.memory"},
		{map[string]any{"scope": "thread", "maxHistoryMessages": -1}, "session.maxHistoryMessages"},
		{map[string]any{"scope": "thread", "toolResultLimit": -5}, "session.toolResultLimit"},
		{map[string]any{"scope": "thread", "compaction": map[string]any{}}, "session.compaction: needs a budget"},
		{map[string]any{"scope": "thread", "maxHistoryMessages": 4, "compaction": map[string]any{"keepTurns": 0}}, "session.compaction.keepTurns"},
		{map[string]any{"scope": "thread", "maxHistoryMessages": 4, "compaction": map[string]any{"keep": 2}}, "session.compaction"},
		{map[string]any{"scope": "thread", "ttl": "forever"}, "session.ttl"},
		{map[string]any{"scope": "thread", "allowedModels": []any{map[string]any{"name": "x"}}}, "session.allowedModels[0].model"},
		{map[string]any{"scope": "thread", "allowedModels": []any{"a", "a"}}, "session.allowedModels[1].name"},
		{map[string]any{"scope": "thread", "allowedModels": []any{map[string]any{"name": "default", "model": "m"}}}, "session.allowedModels[0].name"},
		{map[string]any{"scope": "thread", "allowedModels": []any{map[string]any{"model": "m", "url": "ftp://x"}}}, "session.allowedModels[0].url"},
		{map[string]any{"scope": "thread", "allowedModels": []any{3}}, "session.allowedModels[0]"},
	}
	for _, c := range cases {
		id, dsl := agentChain(t, "http://127.0.0.1:1/v1", map[string]any{"session": c.session})
		_, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(sessionConfig(sessions.NewMemory())))
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%v: err %v; want it to name %q", c.session, err, c.field)
		}
		// ruleagent validate finds the same, at the same path.
		ps := Validate([]ChainFile{{Path: "a.json", DSL: dsl}}, nil, Options{})
		if len(ps) == 0 || !strings.Contains(ps[0].Error(), "configuration."+strings.SplitN(c.field, ":", 2)[0]) {
			t.Errorf("%v: validate says %v", c.session, ps)
		}
	}
}

// An agent with a session scope and no store to keep it fails at Init,
// saying how to give it one; scope none needs none.
func TestSessionNeedsAStore(t *testing.T) {
	id, dsl := agentChain(t, "http://127.0.0.1:1/v1", map[string]any{"session": map[string]any{"scope": "thread"}})
	_, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig()))
	if err == nil || !strings.Contains(err.Error(), "RegisterSessions") {
		t.Errorf("err %v", err)
	}
	id, dsl = agentChain(t, "http://127.0.0.1:1/v1", map[string]any{"session": map[string]any{"scope": "none"}})
	if _, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig())); err != nil {
		t.Errorf("scope none: %v", err)
	}
}

// In a Go host: the store comes through the RuleGo config; a sub-agent
// keeps a session of its own (the thread reaches it in the propagated
// metadata) or none; events stay valid AG-UI.
func TestSessionsOfAgentsAndSubAgentsInAGoHost(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains("I am helper."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			return llmtest.Reply("helper heard " + r.LastUserText())
		})},
		llmtest.Rule{Match: llmtest.SystemContains("I am forgetful."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			return llmtest.Reply("forgetful heard " + r.LastUserText())
		})},
		llmtest.Rule{Match: llmtest.SystemContains("I am lead."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
				return llmtest.Reply("lead got: " + last.Content)
			}
			return llmtest.Calls(llmtest.Call("Helper", `{"message":"`+r.LastUserText()+`"}`), llmtest.Call("Forgetful", `{"message":"`+r.LastUserText()+`"}`))
		})},
	))
	st := sessions.NewMemory()
	cfg := sessionConfig(st)
	p := rulego.NewRuleGo()
	t.Cleanup(p.Stop)
	mk := func(id, name string, session map[string]any, tools ...any) types.RuleEngine {
		t.Helper()
		def := chain(id, name, map[string]any{"description": name + "."},
			[]map[string]any{agentNode(srv.URL, "I am "+id+".", map[string]any{"tools": tools, "session": session})})
		b, _ := json.Marshal(def)
		e, err := p.New(id, b, rulego.WithConfig(cfg))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	mk("helper", "Helper", map[string]any{"scope": "thread"})
	mk("forgetful", "Forgetful", nil)
	lead := mk("lead", "Lead", map[string]any{"scope": "thread"}, agentTool("helper"), agentTool("forgetful"))
	for _, text := range []string{"first", "second"} {
		r := send(t, context.Background(), lead, text, map[string]string{"threadId": "t1"}, true)
		oneTerminal(t, r, types.Success)
		checkEvents(t, &r.rec)
		var ids []string
		for _, e := range r.rec.Events() {
			if e.Type == events.Custom && e.Name == sessions.EventSession {
				var v struct{ ID string }
				_ = json.Unmarshal(e.Value, &v)
				ids = append(ids, v.ID)
			}
		}
		if strings.Join(ids, ",") != "lead:thread:t1,helper:thread:t1" {
			t.Errorf("session events: %v", ids)
		}
	}
	last := func(prompt string) []llmtest.Message {
		reqs := srv.Requests()
		for i := len(reqs) - 1; i >= 0; i-- {
			if strings.Contains(reqs[i].System(), prompt) {
				return reqs[i].Messages
			}
		}
		t.Fatalf("no request of %s", prompt)
		return nil
	}
	if h := last("I am helper."); len(h) != 4 || h[1].Content != "first" || h[2].Content != "helper heard first" || h[3].Content != "second" {
		t.Errorf("the helper's own session: %+v", h)
	}
	if f := last("I am forgetful."); len(f) != 2 {
		t.Errorf("the sub-agent without a session remembers: %+v", f)
	}
	if l := last("I am lead."); len(l) != 10 || l[1].Content != "first" || l[5].Role != "assistant" || l[6].Content != "second" {
		t.Errorf("the lead's session: %d messages", len(l))
	}
	list, _ := st.List(context.Background(), sessions.Filter{})
	if len(list) != 2 {
		t.Errorf("sessions: %+v", list)
	}
}
