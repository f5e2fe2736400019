package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
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
	// Redirects, Assignments and WorkDirs are, for a shell call, the rest
	// of what the person approves (see ShellCall): every redirect and
	// variable assignment of the call, and the directories it runs in.
	Redirects   []string
	Assignments []string
	WorkDirs    []string
	// ResponseSchema, when set, is a form the person fills: the answer
	// becomes the call's result, and the tool does not run.
	ResponseSchema json.RawMessage
	// Timeout is how long the call waits.
	Timeout time.Duration
	// InterruptID is set when the call is resumed after its run paused
	// on it: the interrupt whose answer decides it (see ErrPaused).
	InterruptID string
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
// timeout (a denial) or ctx's end; or, for a run that can pause (the
// server's), it raises an interrupt and returns a *PauseError at once:
// the run then pauses, and its resumption asks again with the request's
// InterruptID set, which the answers decide.
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
// A call resumed after a pause names the interrupt it paused on: the
// approver answers it from the answers the resume brought.
func (s *Set) approve(ctx context.Context, r *Run, e *Entry, c Call, args json.RawMessage, interrupt string) (res Result, newArgs json.RawMessage, done bool, err error) {
	byName := r.Approval.Needs(c.Name)
	var shell ShellCall
	if r.Approval != nil {
		if m, ok := e.Tool.(CommandMatcher); ok {
			shell = m.MatchCommands(args, CommandSelection{All: byName, Patterns: r.Approval.Commands})
		}
	}
	commands := shell.Commands
	if len(e.ResponseSchema) == 0 && !byName && len(commands) == 0 {
		return Result{}, args, false, nil
	}
	a := ApproverFrom(ctx)
	if a == nil {
		return Result{}, nil, false, Errorf(ErrApprovalDenied, "%s needs a person's approval, and nobody can give it to this run (it was not started by a client that answers approvals)", c.Name)
	}
	req := ApprovalRequest{RunID: r.Point.RunID, ToolCallID: c.ID, Tool: c.Name, ToolType: e.Type, Args: args, Commands: commands,
		Redirects: shell.Redirects, Assignments: shell.Assignments, WorkDirs: shell.WorkDirs,
		ResponseSchema: e.ResponseSchema, Timeout: r.Approval.Wait(), InterruptID: interrupt}
	d, err := a.Approve(ctx, req)
	if err != nil {
		if errors.Is(err, ErrPaused) {
			return Result{}, nil, false, err
		}
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

// CommandSelection says which commands of a shell call need a person:
// every one (All: the tool needs approval by name), or those the policy's
// command patterns select. Commands that run code the tool's policy
// cannot read (bash with interpreters on) need one whenever approvals are
// configured, whatever the selection.
type CommandSelection struct {
	All      bool
	Patterns []string
}

// ShellCall is what approving a shell call covers, exactly: a person who
// answers "always" approves these commands with these redirects and
// variable assignments in these directories, and nothing else.
type ShellCall struct {
	// Commands are the selected commands in canonical form: their words
	// after quote removal joined by single spaces, so that approving `git
	// status` can never approve `git -c core.pager=... log`.
	Commands []string
	// Redirects are every redirect of the call as written (`> out.txt`,
	// `2>&1`), those of nested scripts (`sh -c '...'`) included: a
	// redirect anywhere can feed an approved command (`exec > file`, a
	// function called with one).
	Redirects []string
	// Assignments are every variable assignment of the call as written
	// (`GIT_SSH_COMMAND=...`, `export X=1`): they change what the
	// approved commands do.
	Assignments []string
	// WorkDirs are the directories the commands may run in: the call's
	// work_dir first ("." for the workspace, else relative to it), then
	// where cd, pushd and env -C lead.
	WorkDirs []string
}

// CommandMatcher is implemented by tools that run shell commands (bash):
// it parses the command of a call's arguments as the tool's policy does
// and returns what approving the call covers.
type CommandMatcher interface {
	MatchCommands(args json.RawMessage, sel CommandSelection) ShellCall
}

// OneLine is the call as a question to a person shows it: a shell call's
// commands with every redirect, variable assignment and directory of the
// call, or the tool's arguments.
func (req ApprovalRequest) OneLine() string {
	if len(req.Commands) > 0 || len(req.WorkDirs) > 0 {
		var b strings.Builder
		b.WriteString(strings.Join(req.Commands, "; "))
		if len(req.Redirects) > 0 {
			b.WriteString(" with redirects " + strings.Join(req.Redirects, ", "))
		}
		if len(req.Assignments) > 0 {
			b.WriteString(" setting " + strings.Join(req.Assignments, ", "))
		}
		if len(req.WorkDirs) > 0 {
			b.WriteString(" in work_dir " + req.WorkDirs[0])
			if len(req.WorkDirs) > 1 {
				b.WriteString(" (then " + strings.Join(req.WorkDirs[1:], ", ") + ")")
			}
		}
		return b.String()
	}
	var b bytes.Buffer
	if json.Compact(&b, req.Args) != nil {
		return string(req.Args)
	}
	if b.Len() > 300 {
		return b.String()[:300] + "…"
	}
	return b.String()
}
