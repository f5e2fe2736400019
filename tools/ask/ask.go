// Package ask is the hook through which a tool, or a rule-chain node, asks a
// person for input in the middle of a run: a confirmation, or a small form.
//
// Whoever runs the chain decides how the question reaches a person, and puts
// an Asker in the run's context:
//
//   - the MCP server (package server) answers a 2026-07-28 client with an
//     input_required result carrying the question and continues the run when
//     the client retries with the answer; a 2025-11-25 client that declared
//     the elicitation capability gets an elicitation/create request; any
//     other client gets a tool error saying what was asked;
//   - the MCP client (package tools/mcp) hands a remote server's question to
//     the Asker of the calling run, and without one fails the call with an
//     error saying what was asked;
//   - governance (approvals, an agent's responseSchema) will put an Asker in
//     the agent's runs that raises an AG-UI interrupt.
//
// Code that needs an answer calls Ask(ctx, q): it blocks until the person
// answers, the run is cancelled, or no one can be asked (ErrNoOneToAsk).
package ask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Question is what is asked of a person.
type Question struct {
	// ID names the question within its call, so that several questions
	// (from parallel branches, or one after another) stay apart: an MCP
	// client answers it under this key. Empty means DefaultID. It should
	// stay the same when the same thing is asked again.
	ID string `json:"id,omitempty"`
	// Message says what is asked, in words for a person.
	Message string `json:"message"`
	// Schema is the JSON Schema of the answer's content: an object whose
	// properties are strings, numbers, integers, booleans or enums (the
	// subset an MCP client can render as a form). Nil asks only to accept
	// or decline.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// DefaultID is the ID of a question that gives none.
const DefaultID = "input"

// Key is the question's ID, or DefaultID.
func (q Question) Key() string {
	if q.ID == "" {
		return DefaultID
	}
	return q.ID
}

// Action is how the person answered.
type Action string

// The actions of an answer, as MCP elicitation names them.
const (
	// Accept: the person answered; Content holds the answer.
	Accept Action = "accept"
	// Decline: the person said no.
	Decline Action = "decline"
	// Cancel: the person dismissed the question without choosing.
	Cancel Action = "cancel"
)

// Answer is a person's answer to a Question.
type Answer struct {
	Action Action `json:"action"`
	// Content is the answer, a JSON object matching the question's
	// Schema, when Action is Accept.
	Content json.RawMessage `json:"content,omitempty"`
}

// Asker asks a person a question and waits for the answer. Implementations
// must return when ctx ends.
type Asker interface {
	Ask(ctx context.Context, q Question) (Answer, error)
}

// AskerFunc adapts a function to Asker.
type AskerFunc func(ctx context.Context, q Question) (Answer, error)

// Ask implements Asker.
func (f AskerFunc) Ask(ctx context.Context, q Question) (Answer, error) { return f(ctx, q) }

// ErrNoOneToAsk reports that the run has no way to reach a person: no
// Asker, or one whose client cannot show questions. Test it with
// errors.Is; the *NotAskedError carrying it says what was asked.
var ErrNoOneToAsk = errors.New("no one can be asked")

// NotAskedError is a question that could not be put to anyone, and why.
type NotAskedError struct {
	Question Question
	// Why says who could not be asked, for the message: "the MCP client
	// did not declare the elicitation capability".
	Why string
}

func (e *NotAskedError) Error() string {
	why := e.Why
	if why == "" {
		why = "nothing in this run can ask a person"
	}
	return fmt.Sprintf("a person's input is needed, but %s; it asked: %s", why, Describe(e.Question))
}

// Is makes errors.Is(err, ErrNoOneToAsk) true.
func (e *NotAskedError) Is(target error) bool { return target == ErrNoOneToAsk }

type askerKey struct{}

// WithAsker returns ctx carrying a. A nil a removes any Asker: code below
// cannot reach the person its caller could.
func WithAsker(ctx context.Context, a Asker) context.Context {
	return context.WithValue(ctx, askerKey{}, asker{a})
}

// asker wraps the value so that WithAsker(ctx, nil) shadows an outer one.
type asker struct{ a Asker }

// From returns the Asker in ctx, or nil.
func From(ctx context.Context) Asker {
	v, _ := ctx.Value(askerKey{}).(asker)
	return v.a
}

// Ask asks q through the Asker in ctx. Without one it returns a
// *NotAskedError (errors.Is ErrNoOneToAsk). An answer other than Accept is
// returned as it is, without an error: declining is an answer.
func Ask(ctx context.Context, q Question) (Answer, error) {
	if err := Check(q); err != nil {
		return Answer{}, err
	}
	a := From(ctx)
	if a == nil {
		return Answer{}, &NotAskedError{Question: q}
	}
	return a.Ask(ctx, q)
}

// Check reports a question that cannot be asked: no message, or a schema
// that is not a JSON object schema.
func Check(q Question) error {
	if q.Message == "" {
		return errors.New("ask: the question has no message")
	}
	if len(q.Schema) > 0 {
		var s struct {
			Type any `json:"type"`
		}
		if err := json.Unmarshal(q.Schema, &s); err != nil {
			return fmt.Errorf("ask: the question's schema is not JSON: %w", err)
		}
		if s.Type != "object" {
			return errors.New(`ask: the question's schema must be an object schema ({"type":"object","properties":{...}})`)
		}
	}
	return nil
}

// ErrPending is the error Ask returns when the question was put to
// someone who answers later, after the run has paused: the node that asked
// ends its branch with it (TellFailure, with the message it received), and
// is entered again with that message once the answer is in, when asking
// the same question (same Key) gets the answer at once. A node that asks
// should therefore ask before doing anything it would not want done twice.
var ErrPending = errors.New("ask: the question waits for an answer; the run pauses until it comes")

// PendingError is the ErrPending of one question: the question as it was
// put (its ID is the key its answer comes under).
type PendingError struct{ Question Question }

func (e *PendingError) Error() string { return ErrPending.Error() + ": " + Describe(e.Question) }

// Is makes a PendingError match ErrPending.
func (e *PendingError) Is(target error) bool { return target == ErrPending }
