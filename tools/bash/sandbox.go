package bash

import (
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// The kernel layer (package tools/sandbox). The policy of this package
// decides what a command may run before it runs; the sandbox makes the
// kernel refuse what the policy missed: executing a program outside the
// allowlist derived from the policy, writing outside the workspace and
// the run's temporary directory, reading credentials and the server's
// state, opening network connections.

// sandboxStatus is sandbox.Describe; tests replace it to play a kernel
// without Landlock.
var sandboxStatus = sandbox.Describe

// sandboxState is the tool's confinement: decided at New, started on the
// first call.
type sandboxState struct {
	mode     sandbox.Mode
	settings sandbox.Settings
	ports    []uint16

	once     sync.Once
	launcher *sandbox.Launcher
	err      error
	warned   sync.Once
}

// newSandboxState checks the sandbox fields of the config.
func newSandboxState(c Config) (*sandboxState, error) {
	mode, err := sandbox.ParseMode(c.Sandbox)
	if err != nil {
		return nil, &tools.ConfigError{Path: "sandbox", Msg: err.Error(), Err: err}
	}
	network := c.Network
	if network == "" {
		network = sandbox.NetworkOff
	}
	ports, err := sandbox.ParseNetwork(network, c.Connect)
	if err != nil {
		return nil, &tools.ConfigError{Path: "network", Msg: err.Error(), Err: err}
	}
	for _, list := range []struct {
		name  string
		paths []string
	}{{"sandboxRead", c.SandboxRead}, {"sandboxWrite", c.SandboxWrite}} {
		for i, p := range list.paths {
			if !filepath.IsAbs(p) {
				return nil, &tools.ConfigError{Path: fmt.Sprintf("%s[%d]", list.name, i), Msg: fmt.Sprintf("%q must be an absolute path", p)}
			}
		}
	}
	return &sandboxState{mode: mode, ports: ports,
		settings: sandbox.Settings{Mode: mode, Read: c.SandboxRead, Write: c.SandboxWrite, Network: network, Connect: c.Connect}}, nil
}

// confinement returns the launcher to start commands with, or nil to run
// them unconfined; an error refuses the command.
func (t *Tool) confinement() (*sandbox.Launcher, error) {
	sb := t.sandbox
	if sb.mode == sandbox.Off {
		return nil, nil
	}
	if st := sandboxStatus(); !st.Available {
		if sb.mode == sandbox.Required {
			return nil, tools.Errorf(tools.ErrExecutionFailed, "the bash tool's sandbox is required but unavailable: %s; nothing was run", st.Reason)
		}
		sb.warned.Do(func() {
			slog.Warn("bash commands run unconfined: the sandbox is unavailable", "reason", st.Reason)
		})
		return nil, nil
	}
	sb.once.Do(func() {
		root, err := os.MkdirTemp("", "ruleagent-sandbox-")
		if err != nil {
			sb.err = err
			return
		}
		sb.launcher = sandbox.NewLauncher(t.sandboxSpec(root))
	})
	if sb.err != nil {
		return nil, tools.Wrap(tools.ErrExecutionFailed, sb.err, "cannot set up the sandbox")
	}
	return sb.launcher, nil
}

// hostLookupTimeout bounds the lookup of each connect-list host name
// when the sandbox starts.
const hostLookupTimeout = 2 * time.Second

// sandboxSpec derives what commands may do from the policy and config.
func (t *Tool) sandboxSpec(tmpRoot string) sandbox.Spec {
	sb := t.sandbox
	pathList := envValue(t.env, "PATH")
	exec := append([]string{t.cfg.ShellPath}, sandbox.ProgramsOnPath(pathList, t.policy.execAllowed)...)
	exec = append(exec, sandbox.Loaders(t.cfg.ShellPath)...)
	var execDirs []string
	if t.policy.execAllowed("git") {
		execDirs = append(execDirs, "/usr/lib/git-core", "/usr/libexec/git-core")
	}
	hidden := append([]string{filepath.Join(t.ws.Dir(), ".ruleagent", "backups")}, sandbox.DefaultHidden()...)
	home, _ := os.UserHomeDir()
	if home != "" {
		for _, c := range sandbox.CredentialDirs {
			hidden = append(hidden, filepath.Join(home, c))
		}
	}
	hidden = append(hidden, denyArgPaths(t.policy.denyArgs, t.ws.Dir(), home)...)
	protected, secret := tools.SplitServerPaths(t.serverPaths)
	return sandbox.Spec{
		Workspace: t.ws.Dir(), Read: sb.settings.Read, Write: sb.settings.Write,
		Exec: exec, ExecDirs: execDirs, Hidden: hidden, TmpRoot: tmpRoot, Protected: protected, Secret: secret,
		Network: sb.settings.Network, Connect: sb.ports, Hosts: sandbox.ResolveHosts(sb.settings.Connect, hostLookupTimeout),
		Namespaces: sandboxStatus().Namespaces,
	}
}

// denyArgPaths are the paths of denyArgs entries, which the kernel keeps
// unreadable as it keeps credentials: entries that name a path (absolute,
// relative to the workspace, or ~/...), and bare names of a file or
// directory at the top of the workspace; glob patterns stand for the
// paths they match when the sandbox starts. Options (-x, --x) are not
// paths.
func denyArgPaths(denyArgs []string, ws, home string) []string {
	var out []string
	for _, a := range denyArgs {
		if strings.HasPrefix(a, "-") {
			continue
		}
		p := a
		switch {
		case strings.HasPrefix(a, "~/") && home != "":
			p = filepath.Join(home, a[2:])
		case !filepath.IsAbs(a):
			p = filepath.Join(ws, a)
			if !strings.Contains(a, "/") {
				if _, err := os.Lstat(p); err != nil && !strings.ContainsAny(a, "*?[") {
					continue // an argument such as a branch name
				}
			}
		}
		p = filepath.Clean(p)
		if strings.ContainsAny(p, "*?[") {
			matches, _ := filepath.Glob(p)
			out = append(out, matches...)
			continue
		}
		out = append(out, p)
	}
	return out
}

func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// execAllowed decides whether the program named base may be executed by a
// confined command. In allow mode: the allowed names. In deny mode: every
// program except those a deny rule refuses by name alone, and, unless the
// interpreters setting is on, interpreters and the programs that run code
// from files (make, npm, ...), and the runners whose arguments the policy
// cannot parse.
func (p *Policy) execAllowed(base string) bool {
	if p.mode == modeAllow {
		return p.allow[base]
	}
	lower := strings.ToLower(base)
	for _, g := range p.groups {
		for _, pat := range g.patterns {
			if len(pat.flags)+len(pat.operands) == 0 && pat.matchesName(lower) {
				return false
			}
		}
	}
	for _, pat := range p.deny {
		if len(pat.flags)+len(pat.operands) == 0 && pat.matchesName(lower) {
			return false
		}
	}
	if _, opaque := opaqueRunners[lower]; opaque || isDynamicLoader(lower) {
		return false
	}
	if p.interpreters != interpretersOn && (isInterpreter(lower) || codeRunners[lower]) {
		return false
	}
	return !strings.HasPrefix(path.Base(lower), "ld-linux")
}

// sandboxCommand is the command as the sandbox launcher takes it.
func sandboxCommand(t *Tool, command, dir, runID string, stdout, stderr *os.File) sandbox.Command {
	return sandbox.Command{Path: t.cfg.ShellPath, Args: []string{t.cfg.ShellPath, "-c", command}, Dir: dir, Env: t.env,
		Run: runID, Stdout: stdout, Stderr: stderr}
}

// confined is a command started by the sandbox launcher.
type confined struct{ p *sandbox.Process }

func (c confined) wait() (ws syscall.WaitStatus, err error) { return c.p.Wait() }
func (c confined) kill()                                    { c.p.Kill() }

// describeSandbox says how commands are confined, for the tool's
// description and listings.
func (t *Tool) describeSandbox() string {
	sb := t.sandbox
	if sb.mode == sandbox.Off {
		return "Commands are not confined by the kernel (sandbox: off)."
	}
	st := sandboxStatus()
	if !st.Available {
		if sb.mode == sandbox.Required {
			return "The sandbox is required but unavailable (" + st.Reason + "), so commands are refused."
		}
		return "Commands run unconfined: the sandbox is unavailable (" + st.Reason + ")."
	}
	net := "no network"
	switch sb.settings.Network {
	case sandbox.NetworkAny:
		net = "the network"
	case sandbox.NetworkLoopback:
		net = "a private loopback network"
	}
	if len(sb.settings.Connect) > 0 {
		net += " plus TCP to " + strings.Join(sb.settings.Connect, ", ")
	}
	return fmt.Sprintf("Commands are confined by %s: they may write only in the workspace and a private temporary directory ($TMPDIR, also $HOME), execute only the programs this policy allows, and use %s.", st.Mechanism, net)
}
