// Package bash is the built-in bash tool: it runs a shell command in the
// agent's workspace and returns its exit code and output.
//
// Because the model chooses the commands, every command is checked by a
// Policy before anything runs. The policy parses the command with a real
// shell parser and checks every command the script would run, including
// those hidden in substitutions and launched by env, xargs, find -exec,
// sh -c or eval, and refuses with a reason the model can act on. It
// advises; the guarantee is the kernel sandbox (package tools/sandbox),
// which confines what actually runs: the programs it may execute, the
// files it may read and write, the network. Besides both, the environment
// is an allowlist (no API keys reach the command), the shell is not a
// login shell, and the timeout kills the whole process group.
package bash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/internal/testhooks"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

func init() {
	tools.MustRegister(tools.Definition{
		Name:         "bash",
		Description:  "Run a shell command in the workspace, after a policy check of every command it would run; returns the exit code, stdout and stderr.",
		ConfigSchema: tools.SchemaFor(defaultConfig),
		ArgsSchema:   argsSchema,
		New:          New,
	})
}

var argsSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The shell command to run, as one string. Pipes, lists, loops and substitutions are allowed; every command in it is checked before anything runs."},
    "work_dir": {"type": "string", "description": "Directory to run in: a path relative to the workspace, or an absolute path inside it. Defaults to the workspace."},
    "timeout": {"type": "integer", "minimum": 1, "description": "Timeout in milliseconds. It can only shorten the configured timeout."}
  },
  "required": ["command"],
  "additionalProperties": false
}`)

// Tool is a configured bash tool. It holds the workspace root open; Close
// releases it.
type Tool struct {
	sandbox *sandboxState
	// policyOff is set by tests only, through tools/internal/testhooks.
	policyOff bool
	cfg       Config
	policy    *Policy
	ws        *workspace.Workspace
	// serverPaths are the server's own paths, which the kernel keeps
	// commands from writing (and the secret ones from reading).
	serverPaths []tools.ServerPath
	env         []string
	info        tools.Info
}

var _ io.Closer = (*Tool)(nil)

// The switch that turns the command policy off is for tests only; it is
// reachable through tools/internal/testhooks, which nothing outside the
// tools can import.
func init() {
	testhooks.InstallBashPolicySwitch(func(tool any) (func(), bool) {
		t, ok := tool.(*Tool)
		if !ok {
			return nil, false
		}
		t.policyOff = true
		return func() { t.policyOff = false }, true
	})
}

// New makes a bash tool from its config. Bad config is a *tools.ConfigError
// naming the field.
func New(bc tools.BuildContext, raw json.RawMessage) (tools.Tool, error) {
	cfg := defaultConfig
	if err := tools.DecodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	s, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	dir := cfg.WorkDir
	if dir == "" {
		dir = bc.WorkDir
	}
	ws, err := workspace.Open(dir, workspace.Options{ServerPaths: bc.ServerPaths})
	if err != nil {
		return nil, &tools.ConfigError{Path: "workDir", Msg: err.Error(), Err: err}
	}
	if bc.Secrets != nil {
		var secrets []string
		for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
			if v := cfg.Env[k]; v != "" {
				secrets = append(secrets, v)
			}
		}
		if len(secrets) > 0 {
			bc.Secrets.AddSecrets(secrets...)
		}
	}
	sb, err := newSandboxState(cfg)
	if err != nil {
		ws.Close()
		return nil, err
	}
	t := &Tool{cfg: cfg, policy: newPolicy(s), ws: ws, env: commandEnv(cfg.Env), sandbox: sb, serverPaths: slices.Clone(bc.ServerPaths)}
	t.policy.setWorkspace(ws.Dir())
	t.policy.setServerPaths(bc.ServerPaths)
	t.info = tools.Info{Name: "bash", Description: t.describe(), Parameters: argsSchema}
	return t, nil
}

func (t *Tool) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run a shell command with %s -c in the workspace %s and get its exit code, stdout and stderr. ", t.cfg.ShellPath, t.ws.Dir())
	fmt.Fprintf(&b, "Stdin is empty, the environment holds no secrets, and after %s (or the shorter timeout you pass) the command is killed with everything it started; processes still running when it ends are killed too. ", t.cfg.Timeout.D())
	b.WriteString("Every command is checked before anything runs: command names must be literal words (not $VAR or $(...)), and dangerous commands are refused with the reason.")
	if t.cfg.Mode == modeAllow {
		fmt.Fprintf(&b, " Only these commands may run: %s.", strings.Join(t.cfg.Allow, ", "))
	}
	b.WriteString(" " + t.describeSandbox())
	return b.String()
}

// Info implements tools.Tool.
func (t *Tool) Info() tools.Info { return t.info }

// Close releases the workspace and stops the sandbox helper, killing any
// command still running.
func (t *Tool) Close() error {
	sb := t.sandbox
	// Either the launcher was made (and is closed here), or no call may
	// make one any more.
	sb.once.Do(func() { sb.err = errors.New("the tool is closed") })
	if sb.launcher != nil {
		_ = sb.launcher.Close()
	}
	return t.ws.Close()
}

type callArgs struct {
	Command string `json:"command"`
	WorkDir string `json:"work_dir"`
	Timeout *int64 `json:"timeout"`
}

// Call implements tools.Tool: it checks the command, then runs it.
func (t *Tool) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var args callArgs
	if err := tools.DecodeArgs(raw, &args); err != nil {
		return tools.Result{}, err
	}
	timeout := t.cfg.Timeout.D()
	if args.Timeout != nil {
		if *args.Timeout <= 0 {
			return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "timeout must be a positive number of milliseconds, got %d", *args.Timeout)
		}
		if ms := *args.Timeout; ms < int64(timeout/time.Millisecond) {
			timeout = time.Duration(ms) * time.Millisecond
		}
	}
	dir, err := t.workDir(args.WorkDir)
	if err != nil {
		return tools.Result{}, err
	}
	if !t.policyOff {
		if err := t.policy.CheckIn(args.Command, dir); err != nil {
			return tools.Result{}, err
		}
	}
	runID := ""
	if ci := tools.CallFrom(ctx); ci != nil {
		runID = ci.RunID
	}
	return t.run(ctx, args.Command, dir, runID, timeout)
}

// workDir resolves the work_dir argument inside the workspace.
func (t *Tool) workDir(p string) (string, error) {
	if p == "" {
		// Commands start in the workspace: it must exist.
		return t.ws.Dir(), t.ws.Ready()
	}
	rel, err := t.ws.Resolve(p)
	if err != nil {
		return "", err
	}
	root, err := t.ws.Root()
	if err != nil {
		return "", err
	}
	fi, err := root.Stat(rel)
	if err != nil {
		return "", tools.Wrap(tools.ErrInvalidPath, err, "work_dir %q", p)
	}
	if !fi.IsDir() {
		return "", tools.Errorf(tools.ErrInvalidPath, "work_dir %q is not a directory", p)
	}
	return t.ws.Abs(rel), nil
}
