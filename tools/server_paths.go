package tools

import (
	"fmt"
	"path/filepath"
	"strings"
)

// ErrServerPath: the call would write, or read, a path the server itself
// owns (its chains folder, its data directory, its policy file...). Such
// errors are also ErrPolicyDenied.
var ErrServerPath = fmt.Errorf("%w: a path of the server's own", ErrPolicyDenied)

// ServerPath is a file or folder the server running the agents owns: no
// tool call the model chooses may change it, whatever the chain's
// configuration (a workspace of ".", a bash sandboxWrite above it). The
// file tools refuse it through their workspace, and the kernel (Landlock)
// refuses it to bash commands and stdio MCP servers.
type ServerPath struct {
	// Path is absolute and clean.
	Path string
	// What names it for the model: "the server's chains folder".
	What string
	// Secret paths may not be read either (the data directory: sessions,
	// API keys, the audit log, run records).
	Secret bool
	// Hint tells the model the right way, if there is one: "agents change
	// chains with save_rule_chain".
	Hint string
}

// Covers reports whether abs (absolute, clean) is p's path or lies under
// it.
func (p ServerPath) Covers(abs string) bool {
	return abs == p.Path || strings.HasPrefix(abs, strings.TrimSuffix(p.Path, string(filepath.Separator))+string(filepath.Separator))
}

// ServerPathError refuses a call that would touch a ServerPath. It is
// ErrServerPath and ErrPolicyDenied (errors.Is).
type ServerPathError struct {
	// Name is the path as the call gave it.
	Name string
	// Owner is the server path it reaches.
	Owner ServerPath
	// Write is true when writing was refused (false: reading).
	Write bool
}

func (e *ServerPathError) Error() string { return "permission denied: " + e.Reason() }

// Reason is the refusal without its "permission denied: " prefix: what
// the path is and the right way.
func (e *ServerPathError) Reason() string {
	what := "is"
	if e.Name != e.Owner.Path && !strings.HasSuffix(e.Owner.What, "file") {
		what = "is in"
	}
	msg := fmt.Sprintf("%s %s %s", e.Name, what, e.Owner.What)
	if e.Write && !e.Owner.Secret {
		msg += ", which agents may read but not change"
	}
	if e.Owner.Hint != "" {
		msg += "; " + e.Owner.Hint
	}
	return msg
}

// Unwrap makes the error ErrServerPath, and so ErrPolicyDenied.
func (e *ServerPathError) Unwrap() error { return ErrServerPath }

// ServerPathOf returns the server path of paths that covers abs for the
// given access: every one when writing, the secret ones when reading.
func ServerPathOf(paths []ServerPath, abs string, write bool) (ServerPath, bool) {
	for _, p := range paths {
		if (write || p.Secret) && p.Covers(abs) {
			return p, true
		}
	}
	return ServerPath{}, false
}

// SplitServerPaths sorts paths into those processes may read but not
// write and the secret ones, as sandbox.Spec's Protected and Secret take
// them.
func SplitServerPaths(paths []ServerPath) (protected, secret []string) {
	for _, p := range paths {
		if p.Secret {
			secret = append(secret, p.Path)
		} else {
			protected = append(protected, p.Path)
		}
	}
	return protected, secret
}
