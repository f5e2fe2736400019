package mcptool

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/childenv"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// StdioSandbox confines a stdio server with the kernel sandbox (package
// tools/sandbox), as the bash tool confines its commands. It is opt-in:
// without it the server runs unconfined.
type StdioSandbox struct {
	Mode    string   `json:"mode,omitempty" jsonschema:"required (refuse to start the server unconfined) or best-effort (the default: confine where the kernel supports Landlock, otherwise start it unconfined with a warning)."`
	Read    []string `json:"read,omitempty" jsonschema:"Absolute paths the server may read, besides system libraries and configuration (for example its package directory)."`
	Write   []string `json:"write,omitempty" jsonschema:"Absolute paths the server may read and write, besides its working directory and a private temporary directory (for example an npm cache)."`
	Network string   `json:"network,omitempty" jsonschema:"off (the default), loopback or any, as for the bash tool."`
	Connect []string `json:"connect,omitempty" jsonschema:"host:port destinations the server may open TCP connections to; the kernel checks the port."`
}

// stdioSandbox is a validated StdioSandbox.
type stdioSandbox struct {
	mode     sandbox.Mode
	settings StdioSandbox
	ports    []uint16
	// serverPaths are the host's own paths (BuildEnv.ServerPaths), which
	// the server may not write, nor read the secret ones.
	serverPaths []tools.ServerPath
}

// checkSandbox validates the sandbox field of a stdio server's config.
func checkSandbox(s *StdioSandbox) (*stdioSandbox, error) {
	if s == nil {
		return nil, nil
	}
	mode := sandbox.BestEffort
	if s.Mode != "" {
		m, err := sandbox.ParseMode(s.Mode)
		if err != nil || m == sandbox.Off {
			return nil, &tools.ConfigError{Path: "sandbox.mode", Msg: fmt.Sprintf("must be %q or %q (leave sandbox out to run unconfined), got %q", sandbox.Required, sandbox.BestEffort, s.Mode)}
		}
		mode = m
	}
	network := s.Network
	if network == "" {
		network = sandbox.NetworkOff
	}
	ports, err := sandbox.ParseNetwork(network, s.Connect)
	if err != nil {
		return nil, &tools.ConfigError{Path: "sandbox.network", Msg: err.Error(), Err: err}
	}
	for i, p := range append(append([]string{}, s.Read...), s.Write...) {
		if !filepath.IsAbs(p) {
			return nil, &tools.ConfigError{Path: "sandbox", Msg: fmt.Sprintf("path %d (%q) must be absolute", i, p)}
		}
	}
	s.Network = network
	return &stdioSandbox{mode: mode, settings: *s, ports: ports}, nil
}

// confine rewrites the server's command to run confined, and returns what
// removes its temporary directory once the server has ended. Where the
// kernel cannot confine it, best-effort starts it unconfined.
func (s *stdioSandbox) confine(cmd *exec.Cmd, cwd string) (cleanup func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	st := sandbox.Describe()
	if !st.Available {
		if s.mode == sandbox.Required {
			return nil, fmt.Errorf("the server's sandbox is required but unavailable: %s", st.Reason)
		}
		return func() {}, nil
	}
	root, err := os.MkdirTemp("", "ruleagent-mcp-sandbox-")
	if err != nil {
		return nil, err
	}
	cleanup = func() { os.RemoveAll(root) }
	if cmd.Path != "" && !filepath.IsAbs(cmd.Path) && cmd.Dir != "" {
		cmd.Path = filepath.Join(cmd.Dir, cmd.Path)
	}
	pathList := ""
	for _, kv := range cmd.Env {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			pathList = kv[5:]
		}
	}
	if pathList == "" {
		pathList = childenv.FallbackPath
	}
	exe := append([]string{cmd.Path}, sandbox.ProgramsOnPath(pathList, func(string) bool { return true })...)
	exe = append(exe, sandbox.Loaders(cmd.Path)...)
	hidden := sandbox.DefaultHidden()
	if home, err := os.UserHomeDir(); err == nil {
		for _, c := range sandbox.CredentialDirs {
			hidden = append(hidden, filepath.Join(home, c))
		}
	}
	workspace := cwd
	if workspace == "" {
		workspace = root
	}
	protected, secret := tools.SplitServerPaths(s.serverPaths)
	spec := sandbox.Spec{Workspace: workspace, Read: s.settings.Read, Write: s.settings.Write, Exec: exe, Hidden: hidden,
		Protected: protected, Secret: secret,
		TmpRoot: root, Network: s.settings.Network, Connect: s.ports, Hosts: sandbox.ResolveHosts(s.settings.Connect, 2*time.Second),
		Namespaces: st.Namespaces}
	if err := sandbox.Confine(cmd, spec); err != nil {
		cleanup()
		return nil, err
	}
	return cleanup, nil
}

// SandboxMode reports whether an mcp tools entry starts a process (a stdio
// server) and, if so, the kernel confinement it runs under: its sandbox
// object's mode, or sandbox.Off when it has none (the server then runs
// unconfined). A host checks it against its sandbox floor.
func SandboxMode(spec tools.Spec) (mode sandbox.Mode, starts bool, err error) {
	t, err := parseConfig(spec.Config, "")
	if err != nil {
		return "", false, tools.Prefix("config", err)
	}
	if t.kind != kindStdio {
		return "", false, nil
	}
	if t.sandbox == nil {
		return sandbox.Off, true, nil
	}
	return t.sandbox.mode, true, nil
}
