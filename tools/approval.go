package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"
)

// ErrApprovalDenied: a person denied the call, or nobody answered in time.
var ErrApprovalDenied = errors.New("approval denied")

// DefaultApprovalTimeout is how long a call waits for a person when the
// policy gives no timeout.
const DefaultApprovalTimeout = 10 * time.Minute

// ApprovalPolicy says which calls of an agent need a person before they
// run (the node's `approval` setting).
type ApprovalPolicy struct {
	// Tools are globs over the names the model sees ("bash", "mcp__*").
	Tools []string `json:"tools,omitempty"`
	// Commands are bash command patterns that need approval even where
	// bash itself does not: the program and leading words of a parsed
	// simple command ("git push", "rm", "kubectl delete").
	Commands []string `json:"commands,omitempty"`
	// Timeout is how long a call waits for an answer; no answer means deny.
	Timeout Duration `json:"timeout,omitempty"`
}

// Needs reports whether a call of tool name needs approval by name alone.
func (p *ApprovalPolicy) Needs(name string) bool {
	if p == nil {
		return false
	}
	for _, g := range p.Tools {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// Wait is how long a call waits for a person.
func (p *ApprovalPolicy) Wait() time.Duration {
	if p == nil || p.Timeout.D() <= 0 {
		return DefaultApprovalTimeout
	}
	return p.Timeout.D()
}

// ApprovalRequest is a call waiting for a person.
type ApprovalRequest struct {
	// RunID is the run of the agent making the call: a sub-agent's own.
	RunID      string
	ToolCallID string
	Tool       string
	ToolType   string
	// Args are the model's arguments, as the person sees them.
	Args json.RawMessage
	// Commands are the parsed commands of a bash call that matched the
	// policy's commands (what the person approves, exactly).
	Commands []string
	// ResponseSchema, when set, is a form the person fills: the answer
	// becomes the call's result, and the tool does not run.
	ResponseSchema json.RawMessage
	// Timeout is how long the call waits.
	Timeout time.Duration
}

// ApprovalDecision is a person's answer.
type ApprovalDecision struct {
	Approved bool
	// Reason is why the person denied (the model reads it), or a note.
	Reason string
	// Args replaces the arguments when the person edited them.
	Args json.RawMessage
	// Answer is the form's answer (see ApprovalRequest.ResponseSchema).
	Answer json.RawMessage
	// Remembered: nobody was asked, the person approved this exact call
	// "always" earlier in the thread.
	Remembered bool
}

// Approver asks a person. Approve blocks until the answer, the request's
// timeout (a denial) or ctx's end.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error)
}

type approverKey struct{}

// WithApprover returns ctx carrying a: the caller of a run (the server)
// puts it there; sub-agents and chain tools inherit it.
func WithApprover(ctx context.Context, a Approver) context.Context {
	return context.WithValue(ctx, approverKey{}, a)
}

// ApproverFrom returns the Approver in ctx, or nil.
func ApproverFrom(ctx context.Context) Approver {
	a, _ := ctx.Value(approverKey{}).(Approver)
	return a
}

// approve asks a person about a call that needs one. done reports that
// the call is answered without running the tool (a form's answer is the
// result); args are the arguments to run it with.
func (s *Set) approve(ctx context.Context, r *Run, e *Entry, c Call, args json.RawMessage) (res Result, newArgs json.RawMessage, done bool, err error) {
	byName := r.Approval.Needs(c.Name)
	commands := r.Approval.matchCommands(e, args, byName)
	if r.Approval != nil {
		// Calls the tool itself says need a person whenever approvals are
		// configured (bash: interpreters, when they are on).
		if ar, ok := e.Tool.(ApprovalRequirer); ok {
			for _, cmd := range ar.ApprovalRequired(args) {
				if !slices.Contains(commands, cmd) {
					commands = append(commands, cmd)
				}
			}
		}
	}
	if len(e.ResponseSchema) == 0 && !byName && len(commands) == 0 {
		return Result{}, args, false, nil
	}
	a := ApproverFrom(ctx)
	if a == nil {
		return Result{}, nil, false, Errorf(ErrApprovalDenied, "%s needs a person's approval, and nobody can give it to this run (it was not started by a client that answers approvals)", c.Name)
	}
	req := ApprovalRequest{RunID: r.Point.RunID, ToolCallID: c.ID, Tool: c.Name, ToolType: e.Type, Args: args, Commands: commands,
		ResponseSchema: e.ResponseSchema, Timeout: r.Approval.Wait()}
	d, err := a.Approve(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, nil, false, ctx.Err()
		}
		return Result{}, nil, false, Wrap(ErrApprovalDenied, err, "%s was not approved", c.Name)
	}
	if !d.Approved {
		if d.Reason == "" {
			return Result{}, nil, false, Errorf(ErrApprovalDenied, "a person denied the call of %s", c.Name)
		}
		return Result{}, nil, false, Errorf(ErrApprovalDenied, "a person denied the call of %s: %s", c.Name, d.Reason)
	}
	if len(e.ResponseSchema) > 0 {
		if len(bytes.TrimSpace(d.Answer)) == 0 {
			return Result{}, nil, false, Errorf(ErrApprovalDenied, "the form of %s was not answered", c.Name)
		}
		return TextResult(string(d.Answer)), args, true, nil
	}
	if len(d.Args) > 0 && !bytes.Equal(d.Args, args) {
		if err := e.schema.Validate(d.Args); err != nil {
			return Result{}, nil, false, fmt.Errorf("arguments edited by a person: %w", err)
		}
		return Result{}, d.Args, false, nil
	}
	return Result{}, args, false, nil
}

// matchCommands returns the parsed commands of a bash call that the
// policy's command patterns select, or all of them when the tool needs
// approval anyway (all), in canonical form (nil for other tools).
func (p *ApprovalPolicy) matchCommands(e *Entry, args json.RawMessage, all bool) []string {
	if p == nil || (len(p.Commands) == 0 && !all) {
		return nil
	}
	m, ok := e.Tool.(CommandMatcher)
	if !ok {
		return nil
	}
	var a struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(args, &a) != nil || a.Command == "" {
		return nil
	}
	if all {
		return m.MatchCommands(a.Command, nil)
	}
	return m.MatchCommands(a.Command, p.Commands)
}

// ApprovalRequirer is implemented by tools some of whose calls need a
// person whenever the agent has approvals configured: bash, for commands
// that run code its policy cannot read (interpreters) when its
// interpreters setting lets them run. It returns those commands, in the
// canonical form of CommandMatcher.
type ApprovalRequirer interface {
	ApprovalRequired(args json.RawMessage) []string
}

// CommandMatcher is implemented by tools that run shell commands (bash):
// it parses command and returns each simple command that matches one of
// patterns (every one when patterns is nil), in a canonical form, so that
// approving `git status` can never approve `git -c core.pager=... log`.
type CommandMatcher interface {
	MatchCommands(command string, patterns []string) []string
}
