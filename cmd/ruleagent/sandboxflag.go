package main

import (
	"flag"
	"path/filepath"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/server"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// sandboxFlags are the flags serve, run, validate and mcp share: the
// sandbox floor, which is also the mode of tools that set none, and the
// switch that lets chains ask for less.
type sandboxFlags struct {
	mode     *string
	allowOff *bool
}

func addSandboxFlags(fs *flag.FlagSet) *sandboxFlags {
	return &sandboxFlags{
		mode: fs.String("sandbox", "", "kernel confinement of the processes tools start (bash commands, stdio MCP servers): required, best-effort or off (default best-effort). "+
			"It is a floor: a chain asking for less is refused"),
		allowOff: fs.Bool("allow-sandbox-off", false, "let chains ask for less confinement than --sandbox (sandbox \"off\", a stdio MCP server without a sandbox)"),
	}
}

// floor combines the flags with the policy file's say (rule, may be nil)
// into the floor chains are checked against, and makes it the mode of the
// tools that set none.
func (f *sandboxFlags) floor(rule *server.SandboxRule) (components.SandboxFloor, error) {
	fl, err := server.Floor(*f.mode, *f.allowOff, rule)
	if err != nil {
		return fl, usagef("%v", err)
	}
	return fl, nil
}

// setSandboxDefault makes mode the mode of the bash tools that set none,
// and hides the data directory from every confined command.
func setSandboxDefault(mode sandbox.Mode, dataDir string) error {
	d := sandbox.Defaults{Mode: mode}
	if dataDir != "" {
		if abs, err := filepath.Abs(dataDir); err == nil {
			d.Hidden = append(d.Hidden, abs)
		}
	}
	return sandbox.SetDefaults(d)
}
