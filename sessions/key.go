// Package sessions keeps agents' conversations between runs: a session per
// scope (the agent, a user, a thread, a user's thread), the real message
// sequence of every turn, a memory policy for what of a run is kept, a
// budget with pruning that never separates a tool call from its result,
// compaction of old turns by the LLM, and stores behind one interface (in
// memory, embedded bbolt, Redis).
//
// A run continues a session through a Conversation (Begin): it holds the
// session's lease for the run, so two runs never interleave on one
// session, and it implements agent.Memory, so the engine recalls the
// history when the run starts and keeps what the run added, in one atomic
// write, when it succeeds.
package sessions

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Scope says what one session is shared by.
type Scope string

// The scopes.
const (
	// ScopeNone keeps no session: every run starts from its input alone.
	ScopeNone Scope = "none"
	// ScopeGlobal is one session per agent, shared by every caller.
	ScopeGlobal Scope = "global"
	// ScopeUser is one session per userId.
	ScopeUser Scope = "user"
	// ScopeThread is one session per threadId.
	ScopeThread Scope = "thread"
	// ScopeUserThread is one session per userId and threadId.
	ScopeUserThread Scope = "user_thread"
)

// Scopes lists the scopes, for messages and forms.
var Scopes = []Scope{ScopeNone, ScopeGlobal, ScopeUser, ScopeThread, ScopeUserThread}

// ParseScope checks a scope name; "" is ScopeNone.
func ParseScope(s string) (Scope, error) {
	if s == "" {
		return ScopeNone, nil
	}
	for _, sc := range Scopes {
		if string(sc) == s {
			return sc, nil
		}
	}
	return "", fmt.Errorf("%q is not a scope (none, global, user, thread, user_thread)", s)
}

// needs lists the message metadata a scope reads.
func (s Scope) needs() (user, thread bool) {
	switch s {
	case ScopeUser:
		return true, false
	case ScopeThread:
		return false, true
	case ScopeUserThread:
		return true, true
	}
	return false, false
}

// Key identifies one session.
type Key struct {
	Agent  string
	Scope  Scope
	User   string
	Thread string
}

// MissingInputError is a run whose session scope needs an input the run
// does not have. It names the input; there is never a fallback to a shared
// key.
type MissingInputError struct {
	Scope Scope
	// Input is the message metadata key: userId or threadId.
	Input string
}

func (e *MissingInputError) Error() string {
	how := "message metadata threadId (AG-UI threadId, the /run body's threadId, metadata.threadId on /v1/chat/completions, ruleagent run --thread)"
	if e.Input == "userId" {
		how = `message metadata userId (the OpenAI "user" field, "metadata": {"userId": ...} in a /run body, ruleagent run --user)`
	}
	return fmt.Sprintf("session scope %q needs the %s: set %s", e.Scope, strings.TrimSuffix(e.Input, "Id")+" id", how)
}

// ErrNoAgent reports a session key without an agent name.
var ErrNoAgent = errors.New("a session needs an agent name")

// KeyFor returns the session key of a run of agent with message metadata
// md. ok is false for ScopeNone. A scope input that is missing or empty is
// a *MissingInputError.
func KeyFor(scope Scope, agent string, md map[string]string) (k Key, ok bool, err error) {
	if scope == ScopeNone || scope == "" {
		return Key{}, false, nil
	}
	if agent == "" {
		return Key{}, false, ErrNoAgent
	}
	k = Key{Agent: agent, Scope: scope}
	user, thread := scope.needs()
	if user {
		if k.User = strings.TrimSpace(md["userId"]); k.User == "" {
			return Key{}, false, &MissingInputError{Scope: scope, Input: "userId"}
		}
	}
	if thread {
		if k.Thread = strings.TrimSpace(md["threadId"]); k.Thread == "" {
			return Key{}, false, &MissingInputError{Scope: scope, Input: "threadId"}
		}
	}
	return k, true, nil
}

// ID is the key's session id: agent:scope[:user][:thread], each part
// escaped so that a ':' or '/' in a name cannot make two keys collide or
// break a URL path segment.
func (k Key) ID() string {
	parts := []string{esc(k.Agent), string(k.Scope)}
	user, thread := k.Scope.needs()
	if user {
		parts = append(parts, esc(k.User))
	}
	if thread {
		parts = append(parts, esc(k.Thread))
	}
	return strings.Join(parts, ":")
}

// esc escapes one part of an id: PathEscape leaves ':' alone, and it is
// the separator.
func esc(s string) string { return strings.ReplaceAll(url.PathEscape(s), ":", "%3A") }

// ParseID reads a session id back into its key.
func ParseID(id string) (Key, error) {
	parts := strings.Split(id, ":")
	bad := func(why string) (Key, error) {
		return Key{}, fmt.Errorf("%q is not a session id (%s; ids look like agent:thread:THREAD)", id, why)
	}
	if len(parts) < 2 {
		return bad("too few parts")
	}
	sc, err := ParseScope(parts[1])
	if err != nil || sc == ScopeNone {
		return bad("unknown scope")
	}
	k := Key{Scope: sc}
	if k.Agent, err = url.PathUnescape(parts[0]); err != nil || k.Agent == "" {
		return bad("no agent")
	}
	user, thread := sc.needs()
	want := 2
	if user {
		want++
	}
	if thread {
		want++
	}
	if len(parts) != want {
		return bad(fmt.Sprintf("scope %s has %d parts", sc, want))
	}
	i := 2
	if user {
		if k.User, err = url.PathUnescape(parts[i]); err != nil || k.User == "" {
			return bad("no user")
		}
		i++
	}
	if thread {
		if k.Thread, err = url.PathUnescape(parts[i]); err != nil || k.Thread == "" {
			return bad("no thread")
		}
	}
	return k, nil
}
