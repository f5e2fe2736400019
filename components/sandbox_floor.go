package components

import (
	"fmt"

	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/bash"
	mcptool "github.com/ruleagent/ruleagent/tools/mcp"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// SandboxFloor is the operator's floor on the kernel confinement of the
// processes agents' tools start: bash commands and stdio MCP servers. No
// chain may ask for less, whoever deploys it (the chains folder, the API,
// MCP's save_rule_chain, ruleagent run), unless the operator allows it.
// Modes are ordered off < best-effort < required.
type SandboxFloor struct {
	// Mode is the least confinement a tool may have; "" (or off) is no
	// floor.
	Mode sandbox.Mode
	// AllowLower lets chains ask for less than Mode
	// (serve --allow-sandbox-off).
	AllowLower bool
}

// ModeRank orders sandbox modes: off 0, best-effort 1, required 2; an
// unknown mode ranks below off.
func ModeRank(m sandbox.Mode) int {
	switch m {
	case sandbox.Off:
		return 0
	case sandbox.BestEffort:
		return 1
	case sandbox.Required:
		return 2
	}
	return -1
}

// Binds reports whether the floor refuses anything.
func (f SandboxFloor) Binds() bool { return !f.AllowLower && ModeRank(f.Mode) > 0 }

// check refuses every tool of node that would start a process under less
// confinement than the floor. Errors are a configerr.List at each tool's
// sandbox setting.
func (f SandboxFloor) check(node string, specs []tools.Spec) error {
	if !f.Binds() {
		return nil
	}
	var errs configerr.List
	for i, s := range specs {
		mode, path, what, err := processMode(s)
		if err != nil || what == "" || ModeRank(mode) >= ModeRank(f.Mode) {
			continue // a config error is reported by the tool's own parser
		}
		errs = append(errs, configerr.New(fmt.Sprintf("tools[%d].%s", i, path),
			"node %q: %s would run with sandbox %q, below the operator's sandbox floor %q (ruleagent serve --sandbox, or the policy file's \"sandbox\"); %s, or ask the operator for --allow-sandbox-off",
			node, what, mode, f.Mode, raise(s, f.Mode)))
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// processMode is the confinement of the processes a tools entry starts:
// the mode, the path of its setting under the entry, and what starts them
// ("" when the entry starts none).
func processMode(s tools.Spec) (mode sandbox.Mode, path, what string, err error) {
	switch {
	case s.Type == tools.TypeBuiltin && s.Name == "bash":
		mode, err = bash.SandboxMode(s.Config)
		return mode, "config.sandbox", "the bash tool's commands", err
	case s.Type == tools.TypeMCP:
		m, starts, err := mcptool.SandboxMode(s)
		if err != nil || !starts {
			return "", "", "", err
		}
		return m, "config.sandbox", "the stdio MCP server", nil
	}
	return "", "", "", nil
}

// raise says how a chain meets the floor.
func raise(s tools.Spec, floor sandbox.Mode) string {
	if s.Type == tools.TypeMCP {
		return fmt.Sprintf(`give the server a "sandbox" object with mode %q`, floor)
	}
	return fmt.Sprintf(`set "sandbox": %q (or leave it out for the server's default)`, floor)
}
