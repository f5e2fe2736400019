package sessions

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/ruleagent/ruleagent/events"
)

// reconcileSeeds are stored histories and requests as clients send them:
// only the new message (any client), the whole conversation back (AG-UI
// with our ids, OpenAI without), with front-end tool results, edited, and
// with system messages.
var reconcileSeeds = [][2]string{
	{`[]`, `[{"role":"user","content":"hi"}]`},
	{`[{"role":"user","content":"hi"},{"id":"m1","role":"assistant","content":"Hello!"}]`,
		`[{"role":"user","content":"and now?"}]`},
	{`[{"role":"user","content":"hi"},{"id":"m1","role":"assistant","content":"Hello!"}]`,
		`[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"id":"m1","role":"assistant","content":"Hello!"},{"role":"user","content":"more"}]`},
	{`[{"role":"user","content":"hi"},{"role":"assistant","content":"> → lookup {}\n\nHello!"}]`,
		`[{"role":"user","content":"hi"},{"role":"assistant","content":"Hello!"},{"role":"user","content":"more"}]`},
	{`[{"role":"user","content":"ship?"},{"id":"m2","role":"assistant","toolCalls":[{"id":"c1","name":"confirm","arguments":"{}"}]}]`,
		`[{"role":"user","content":"ship?"},{"id":"m2","role":"assistant","toolCalls":[{"id":"c1","name":"confirm","arguments":"{}"}]},{"role":"tool","toolCallId":"c1","content":"yes"}]`},
	{`[{"role":"user","content":"ship?"},{"role":"assistant","toolCalls":[{"id":"c1","name":"lookup","arguments":"{}"},{"id":"c2","name":"confirm","arguments":"{}"}]},{"role":"tool","toolCallId":"c1","content":"found"}]`,
		`[{"role":"user","content":"ship?"},{"role":"assistant","toolCalls":[{"id":"c2","name":"confirm","arguments":"{}"}]},{"role":"tool","toolCallId":"c1","content":"found"},{"role":"tool","toolCallId":"c2","content":"yes"}]`},
	{`[{"role":"user","content":"hi"},{"id":"m1","role":"assistant","content":"Hello!"}]`,
		`[{"role":"user","content":"hello (edited)"},{"id":"m9","role":"assistant","content":"Hi there"},{"role":"user","content":"go on"}]`},
	{`[{"role":"user","content":"a"},{"role":"assistant","toolCalls":[{"id":"x","name":"t","arguments":"{}"},{"id":"x","name":"t","arguments":"{}"}]},{"role":"tool","toolCallId":"x","content":"1"}]`,
		`[{"role":"tool","toolCallId":"x","content":"2"},{"role":"developer","content":"d"}]`},
}

// FuzzReconcile: whatever history is stored and whatever a client sends,
// reconciling never panics, is deterministic, keeps every message the
// client sent in order (system and developer ones apart), and what the run
// goes on with, repaired, is a history every LLM API accepts; pruned to a
// budget it still is.
func FuzzReconcile(f *testing.F) {
	for _, s := range reconcileSeeds {
		f.Add([]byte(s[0]), []byte(s[1]), uint8(4), uint16(200))
	}
	f.Fuzz(func(t *testing.T, storedJSON, incomingJSON []byte, maxMessages uint8, maxTokens uint16) {
		var stored, incoming []events.Message
		if json.Unmarshal(storedJSON, &stored) != nil || json.Unmarshal(incomingJSON, &incoming) != nil {
			return
		}
		r := Reconcile(stored, incoming)
		if again := Reconcile(stored, incoming); !reflect.DeepEqual(r, again) {
			t.Fatalf("two reconciliations:\n%+v\n%+v", r, again)
		}

		var system, conv []events.Message
		for _, m := range incoming {
			if m.Role == events.RoleSystem || m.Role == events.RoleDeveloper {
				system = append(system, m)
			} else {
				conv = append(conv, m)
			}
		}
		if !reflect.DeepEqual(r.System, system) {
			t.Fatalf("system messages %+v, sent %+v", r.System, system)
		}
		switch {
		case r.Replaced:
			// The client's history replaces the stored one: all it sent.
			if got := slices.Concat(r.History, r.New); !reflect.DeepEqual(got, conv) {
				t.Fatalf("replaced: history and new %+v, sent %+v", got, conv)
			}
		default:
			if !reflect.DeepEqual(r.History, stored) && !(len(r.History) == 0 && len(stored) == 0) {
				t.Fatalf("continued: history %+v, stored %+v", r.History, stored)
			}
			if !isSubsequence(r.New, conv) {
				t.Fatalf("new %+v is not taken from what was sent %+v", r.New, conv)
			}
		}

		run := Repair(slices.Concat(r.History, r.New))
		if !valid(run) {
			t.Fatalf("repaired history is not valid: %+v", run)
		}
		if !reflect.DeepEqual(Repair(run), run) {
			t.Fatalf("repairing twice changes the history: %+v", run)
		}
		b := Budget{MaxMessages: int(maxMessages), MaxTokens: int(maxTokens)}
		kept, dropped := Prune(run, b, 0, 0)
		if dropped < 0 || dropped+len(kept) < len(run) && dropped != len(run)-len(kept) {
			t.Fatalf("pruned %d of %d, kept %d", dropped, len(run), len(kept))
		}
		if !valid(kept) {
			t.Fatalf("pruning broke the history: %+v\nfrom %+v", kept, run)
		}
	})
}

// isSubsequence reports whether sub's messages appear in all, in order.
func isSubsequence(sub, all []events.Message) bool {
	i := 0
	for _, m := range all {
		if i < len(sub) && reflect.DeepEqual(sub[i], m) {
			i++
		}
	}
	return i == len(sub)
}
