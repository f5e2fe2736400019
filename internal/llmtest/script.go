package llmtest

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Script chooses the answer from the request alone. Keeping no per-server
// conversation state is what lets concurrent conversations share one server:
// each gets answers chosen from its own messages.
type Script interface {
	Respond(r *Request) Response
}

// ScriptFunc adapts a function to Script.
type ScriptFunc func(r *Request) Response

// Respond calls f(r).
func (f ScriptFunc) Respond(r *Request) Response { return f(r) }

// Reply is an answer with text only.
func Reply(text string) Response { return Response{Text: text} }

// Call is a tool call with a generated ID.
func Call(name, argsJSON string) ToolCall { return ToolCall{Name: name, Arguments: argsJSON} }

// Calls is an answer that makes the given tool calls; several are parallel calls.
func Calls(calls ...ToolCall) Response { return Response{ToolCalls: calls} }

// Sequence answers turns[r.Turn()]: the first LLM call of a run gets turns[0],
// the call after one assistant message turns[1], and so on. Past the end it
// repeats the last turn. It panics without turns, as that is a broken test.
func Sequence(turns ...Response) Script {
	if len(turns) == 0 {
		panic("llmtest.Sequence: no turns")
	}
	return ScriptFunc(func(r *Request) Response {
		return turns[min(r.Turn(), len(turns)-1)]
	})
}

// Always answers resp to every request.
func Always(resp Response) Script {
	return ScriptFunc(func(*Request) Response { return resp })
}

// Rule pairs a request predicate with the script that answers when it holds.
type Rule struct {
	Match  func(*Request) bool
	Script Script
}

// Route answers with the first rule whose Match returns true. When none
// matches, it answers 500 with a message saying so, which makes a missing
// rule fail loudly in the client under test.
func Route(rules ...Rule) Script {
	return ScriptFunc(func(r *Request) Response {
		for _, rule := range rules {
			if rule.Match(r) {
				return rule.Script.Respond(r)
			}
		}
		return Response{
			Status:       http.StatusInternalServerError,
			ErrorMessage: fmt.Sprintf("llmtest: no rule matched the request (last user text %q, turn %d)", r.LastUserText(), r.Turn()),
		}
	})
}

// SystemContains matches requests whose system text contains s.
func SystemContains(s string) func(*Request) bool {
	return func(r *Request) bool { return strings.Contains(r.System(), s) }
}

// UserContains matches requests whose last user message contains s.
func UserContains(s string) func(*Request) bool {
	return func(r *Request) bool { return strings.Contains(r.LastUserText(), s) }
}

// Flaky fails the first n attempts of each distinct conversation with the
// given status, then delegates to then. A conversation is keyed by a hash of
// the request's messages, so concurrent conversations keep separate counts
// and a client retrying the same request is counted against the same key.
// Each new turn has new messages, so it too fails n times first. It panics
// when status is not an error status, as that is a broken test.
func Flaky(n int, status int, then Script) Script {
	if status < 300 {
		panic(fmt.Sprintf("llmtest.Flaky: status %d is not an error status", status))
	}
	f := &flaky{failures: n, status: status, then: then, attempts: map[[sha256.Size]byte]int{}}
	return f
}

type flaky struct {
	failures int
	status   int
	then     Script

	mu       sync.Mutex
	attempts map[[sha256.Size]byte]int
}

func (f *flaky) Respond(r *Request) Response {
	// Message has only strings, slices and maps of JSON values, which always
	// marshal; map keys are sorted, so equal conversations hash equally.
	encoded, _ := json.Marshal(r.Messages)
	key := sha256.Sum256(encoded)
	f.mu.Lock()
	f.attempts[key]++
	attempt := f.attempts[key]
	f.mu.Unlock()
	if attempt <= f.failures {
		return Response{
			Status:       f.status,
			ErrorMessage: fmt.Sprintf("llmtest: scripted failure %d of %d for this conversation", attempt, f.failures),
		}
	}
	return f.then.Respond(r)
}
