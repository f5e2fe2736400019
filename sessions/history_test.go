package sessions

import (
	"errors"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/events"
)

// Messages written compactly: "u:text", "a:text", "a:text>id1,id2" (tool
// calls), "t:id:text" (a tool result), "s:text".
func msgs(specs ...string) []events.Message {
	out := make([]events.Message, 0, len(specs))
	for _, s := range specs {
		role, rest, _ := strings.Cut(s, ":")
		m := events.Message{}
		switch role {
		case "u":
			m.Role, m.Content = events.RoleUser, rest
		case "s":
			m.Role, m.Content = events.RoleSystem, rest
		case "a":
			m.Role = events.RoleAssistant
			text, calls, ok := strings.Cut(rest, ">")
			m.Content = text
			if ok {
				for _, id := range strings.Split(calls, ",") {
					m.ToolCalls = append(m.ToolCalls, events.ToolCall{ID: id, Name: "f", Arguments: "{}"})
				}
			}
		case "t":
			id, text, _ := strings.Cut(rest, ":")
			m.Role, m.ToolCallID, m.Content = events.RoleTool, id, text
		}
		out = append(out, m)
	}
	return out
}

func specs(ms []events.Message) string {
	var out []string
	for _, m := range ms {
		switch m.Role {
		case events.RoleUser:
			out = append(out, "u:"+m.Content)
		case events.RoleSystem:
			out = append(out, "s:"+m.Content)
		case events.RoleTool:
			out = append(out, "t:"+m.ToolCallID+":"+m.Content)
		case events.RoleAssistant:
			s := "a:" + m.Content
			var ids []string
			for _, tc := range m.ToolCalls {
				ids = append(ids, tc.ID)
			}
			if len(ids) > 0 {
				s += ">" + strings.Join(ids, ",")
			}
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

func TestPrune(t *testing.T) {
	cases := []struct {
		name    string
		in      []events.Message
		budget  Budget
		extra   int
		want    string
		dropped int
	}{
		{"no budget", msgs("u:1", "a:1"), Budget{}, 0, "u:1 a:1", 0},
		{"fits", msgs("u:1", "a:1"), Budget{MaxMessages: 2}, 0, "u:1 a:1", 0},
		{"whole turns go", msgs("u:1", "a:>c1", "t:c1:r", "a:1", "u:2", "a:2"), Budget{MaxMessages: 3}, 0, "u:2 a:2", 4},
		{"the summary counts", msgs("u:1", "a:1", "u:2", "a:2"), Budget{MaxMessages: 4}, 1, "u:2 a:2", 2},
		{"inside the newest turn, whole tool rounds",
			msgs("u:1", "a:>c1,c2", "t:c1:r1", "t:c2:r2", "a:>c3", "t:c3:r3", "a:done"), Budget{MaxMessages: 4}, 0,
			"u:1 a:>c3 t:c3:r3 a:done", 3},
		{"the last unit always stays", msgs("u:1", "a:>c1", "t:c1:r1", "a:done"), Budget{MaxMessages: 1}, 0, "u:1 a:done", 2},
		{"by tokens", msgs("u:"+strings.Repeat("x", 400), "a:ok", "u:hi", "a:ok"), Budget{MaxTokens: 50}, 0, "u:hi a:ok", 2},
		{"consecutive user messages are one turn", msgs("u:1", "u:1b", "a:1", "u:2", "a:2"), Budget{MaxMessages: 3}, 0, "u:2 a:2", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, n := Prune(c.in, c.budget, c.extra, c.extra*10)
			if specs(got) != c.want || n != c.dropped {
				t.Errorf("got %q (%d dropped), want %q (%d)", specs(got), n, c.want, c.dropped)
			}
			if specs(Repair(got)) != specs(got) {
				t.Errorf("pruning left an invalid history: %q", specs(got))
			}
		})
	}
}

func TestRepair(t *testing.T) {
	cases := []struct{ in, want string }{
		{"u:1 a:>c1 t:c1:r a:ok", "u:1 a:>c1 t:c1:r a:ok"},
		{"u:1 a:>c1,c2 t:c1:r u:2", "u:1 a:>c1,c2 t:c1:r t:c2:" + Unanswered + " u:2"},
		{"u:1 a:>c1", "u:1 a:>c1 t:c1:" + Unanswered},
		{"t:c0:orphan u:1 a:ok t:c9:late", "u:1 a:ok"},
		{"u:1 a:>c1 t:c1:r t:c1:dup t:c7:other", "u:1 a:>c1 t:c1:r"},
		// A call id repeated in one message names one call (found by
		// FuzzReconcile: the repaired history kept both calls, one result).
		{"u:1 a:>x,x t:x:r", "u:1 a:>x t:x:r"},
		{"u:1 a:>x,y,x t:x:r t:x:again", "u:1 a:>x,y t:x:r t:y:" + Unanswered},
	}
	for _, c := range cases {
		in := msgs(strings.Split(c.in, " ")...)
		got := Repair(in)
		if specs(got) != c.want {
			t.Errorf("Repair(%q) = %q, want %q", c.in, specs(got), c.want)
		}
		for _, m := range got {
			if m.Content == Unanswered && m.Error == "" {
				t.Errorf("an unanswered call's result is not marked as an error")
			}
		}
	}
}

func TestReconcile(t *testing.T) {
	withIDs := func(ms []events.Message, ids ...string) []events.Message {
		for i := range ids {
			ms[i].ID = ids[i]
		}
		return ms
	}
	stored := withIDs(msgs("u:hi", "a:hello", "u:lookup", "a:>c1,c2", "t:c1:found"), "u1", "a1", "u2", "a2", "t1")
	cases := []struct {
		name                string
		stored, in          []events.Message
		system, hist, fresh string
		replaced            bool
	}{
		{"only new", stored, msgs("u:next"), "", specs(stored), "u:next", false},
		{"only new, the same text again", msgs("u:yes", "a:ok"), msgs("u:yes"), "", "u:yes a:ok", "u:yes", false},
		{"full history by id", msgs("u:a", "a:b"), withIDs(msgs("s:be brief", "u:a", "a:b", "u:c"), "", "x", "a1"), "s:be brief", "u:a a:b", "u:c", false},
		{"the pending call's result", stored, withIDs(msgs("u:hi", "a:hello", "u:lookup", "a:>c1,c2", "t:c1:found", "t:c2:yes"), "u1", "a1", "u2", "a2"),
			"", specs(stored), "t:c2:yes", false},
		{"an OpenAI client sees its own calls only", stored, msgs("u:hi", "a:hello", "u:lookup", "a:>c2", "t:c2:yes"), "", specs(stored), "t:c2:yes", false},
		{"text with tool activity before the answer", msgs("u:q", "a:>c1", "t:c1:r", "a:the answer"),
			[]events.Message{{Role: events.RoleUser, Content: "q"}, {Role: events.RoleAssistant, Content: "> → f {}\n> ✓ f\n\nthe answer"},
				{Role: events.RoleUser, Content: "more"}}, "", "u:q a:>c1 t:c1:r a:the answer", "u:more", false},
		{"an edited history replaces", msgs("u:a", "a:b", "u:c", "a:d"), msgs("u:a", "a:b", "u:c2"), "", "u:a a:b", "u:c2", true},
		{"history for an empty session", nil, msgs("u:a", "a:b", "u:c"), "", "u:a a:b", "u:c", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Reconcile(c.stored, c.in)
			if specs(r.System) != c.system || specs(r.History) != c.hist || specs(r.New) != c.fresh || r.Replaced != c.replaced {
				t.Errorf("system %q history %q new %q replaced %v", specs(r.System), specs(r.History), specs(r.New), r.Replaced)
			}
		})
	}
}

func TestKeysAndIDs(t *testing.T) {
	md := map[string]string{"userId": "a:b/c", "threadId": "t 1"}
	cases := []struct {
		scope   Scope
		md      map[string]string
		id      string
		missing string
	}{
		{ScopeNone, md, "", ""},
		{ScopeGlobal, nil, "chat:global", ""},
		{ScopeUser, md, "chat:user:a%3Ab%2Fc", ""},
		{ScopeThread, md, "chat:thread:t%201", ""},
		{ScopeUserThread, md, "chat:user_thread:a%3Ab%2Fc:t%201", ""},
		{ScopeUser, map[string]string{"threadId": "t"}, "", "userId"},
		{ScopeUserThread, map[string]string{"userId": "u", "threadId": "  "}, "", "threadId"},
	}
	for _, c := range cases {
		k, ok, err := KeyFor(c.scope, "chat", c.md)
		var mi *MissingInputError
		switch {
		case c.missing != "":
			if !errors.As(err, &mi) || mi.Input != c.missing || !strings.Contains(err.Error(), c.missing) {
				t.Errorf("%s: err %v, want one naming %s", c.scope, err, c.missing)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", c.scope, err)
			continue
		case ok != (c.id != ""):
			t.Errorf("%s: ok %v", c.scope, ok)
			continue
		}
		if !ok {
			continue
		}
		if k.ID() != c.id {
			t.Errorf("%s: id %q, want %q", c.scope, k.ID(), c.id)
		}
		back, err := ParseID(k.ID())
		if err != nil || back != k {
			t.Errorf("ParseID(%q) = %+v, %v", k.ID(), back, err)
		}
	}
	for _, bad := range []string{"chat", "chat:none", "chat:user", "chat:thread:a:b", ":global", "chat:moon:x"} {
		if _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
}
