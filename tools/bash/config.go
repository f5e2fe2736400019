package bash

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// Config is the bash tool's configuration: the "config" object of a
// {"type": "builtin", "name": "bash"} tools entry. It is decoded over
// defaultConfig, so a field left out keeps its default and a field given
// explicitly (even as 0 or "") is validated as given.
type Config struct {
	WorkDir       string            `json:"workDir,omitempty" jsonschema:"Workspace directory the command starts in; work_dir arguments must stay inside it. Empty means the agent's workspace. The shell itself is not confined to it."`
	Timeout       tools.Duration    `json:"timeout,omitempty" jsonschema:"Longest a command may run, in milliseconds or as a duration such as 30s. On expiry the whole process group is killed. A call may ask for less, never for more."`
	MaxOutputSize int               `json:"maxOutputSize,omitempty" jsonschema:"Bytes kept per stream (stdout and stderr each). Longer output keeps its head and tail and says how many bytes were cut."`
	Mode          string            `json:"mode,omitempty" jsonschema:"deny: run whatever the deny rules do not refuse. allow: run only commands named in allow. Allowing a shell or an interpreter (sh, bash, python, node, perl) or a program that runs other programs (git, make, awk, find) makes the allow list moot."`
	Allow         []string          `json:"allow,omitempty" jsonschema:"Command names allowed in allow mode, such as ls or grep. Every command the script would run must be listed, launchers (env, xargs, nice) and builtins (cd, echo, export) included."`
	Deny          []string          `json:"deny,omitempty" jsonschema:"Extra deny patterns, enforced in both modes. A pattern is a command name (a glob such as mkfs* is allowed) followed by flags and operands that must all be present, in any order and spelling: rm -rf also matches rm -r -f, rm -Rf and rm --recursive --force."`
	DenyArgs      []string          `json:"denyArgs,omitempty" jsonschema:"Arguments no command may receive, such as /etc/shadow or --no-verify. Paths are compared after cleaning, long options also match their abbreviations, and glob arguments are matched against the pattern. While denyArgs is set, every argument and redirect target must be a literal word."`
	AllowGroups   []string          `json:"allowGroups,omitempty" jsonschema:"Default deny groups to switch off, by name: destructive, disk, power, forkbomb, download_exec, reverse_shell, env_read, privilege, detach. All groups are on unless listed here."`
	ShellPath     string            `json:"shellPath,omitempty" jsonschema:"Absolute path of the shell, run as shellPath -c command, never as a login or interactive shell. Supported shells: sh, dash, ash, bash, ksh, mksh."`
	Interpreters  string            `json:"interpreters,omitempty" jsonschema:"off (the default): refuse programs that run code the policy cannot check (python3, node, perl, ruby, make, npm, go run, awk programs that call system(), git -c core.pager=..., vim -c), with the rule interpreters. on: let them run. In allow mode the allow list decides which interpreter programs run; code given through the options of other programs is judged by this setting in both modes."`
	Sandbox       string            `json:"sandbox,omitempty" jsonschema:"Kernel confinement of commands (Landlock, Linux 5.13+): required (refuse to run without it), best-effort (confine where the kernel supports it, otherwise run unconfined with a warning) or off. Empty means the server-wide default (best-effort unless ruleagent serve --sandbox says otherwise). The operator's --sandbox is also a floor: a lower mode is refused unless the server runs with --allow-sandbox-off."`
	SandboxRead   []string          `json:"sandboxRead,omitempty" jsonschema:"Extra absolute paths confined commands may read (for example a toolchain such as /usr/local/go, or a module cache)."`
	SandboxWrite  []string          `json:"sandboxWrite,omitempty" jsonschema:"Extra absolute paths confined commands may read and write, besides the workspace and their private temporary directory."`
	Network       string            `json:"network,omitempty" jsonschema:"Network of confined commands: off (the default: no TCP connection or listening socket; with namespaces, no network at all), loopback (a private network with only a loopback interface) or any."`
	Connect       []string          `json:"connect,omitempty" jsonschema:"host:port destinations confined commands may open TCP connections to, on top of network. The kernel checks the port; Landlock rules carry no address."`
	Env           map[string]string `json:"env,omitempty" jsonschema:"Variables added to the command's environment, which otherwise holds only an allowlist taken from the process (PATH, HOME, LANG, LC_*, TERM, TZ, TMPDIR, USER, LOGNAME). The values are registered as secrets, so they are scrubbed from output."`
}

const (
	modeDeny  = "deny"
	modeAllow = "allow"
)

// maxOutputLimit bounds maxOutputSize: two streams of this size are held in
// memory per call.
const maxOutputLimit = 16 << 20

var defaultConfig = Config{
	Timeout:       tools.Duration(30 * time.Second),
	MaxOutputSize: 50000,
	Mode:          modeDeny,
	ShellPath:     "/bin/sh",
	Interpreters:  interpretersOff,
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// forbiddenEnvName reports why setting the variable name would run code the
// policy never sees: shell start-up files, the dynamic loader, or functions
// imported from the environment. It applies to config env and to
// assignments inside commands alike.
func forbiddenEnvName(name string) (reason string, forbidden bool) {
	upper := strings.ToUpper(name)
	switch {
	case upper == "BASH_ENV" || upper == "ENV":
		return "the shell runs the file it names at start-up", true
	case upper == "PROMPT_COMMAND" || upper == "PS4":
		return "the shell evaluates it as code", true
	case upper == "SHELLOPTS" || upper == "BASHOPTS":
		return "it changes how the shell parses and runs commands", true
	case strings.HasPrefix(upper, "BASH_FUNC_"):
		return "bash imports it as a function definition", true
	case strings.HasPrefix(upper, "LD_") || strings.HasPrefix(upper, "DYLD_") || upper == "GCONV_PATH":
		return "the dynamic loader loads code from it", true
	}
	return "", false
}

// settings is a validated Config in the form the tool uses.
type settings struct {
	Config
	shellDialects []dialect
}

// validate checks every field and returns the settings, or a
// *tools.ConfigError naming the first bad field.
func (c Config) validate() (*settings, error) {
	s := &settings{Config: c}
	if c.Timeout <= 0 {
		return nil, &tools.ConfigError{Path: "timeout", Msg: "must be a positive duration, such as 30000 or \"30s\""}
	}
	if c.MaxOutputSize <= 0 || c.MaxOutputSize > maxOutputLimit {
		return nil, &tools.ConfigError{Path: "maxOutputSize", Msg: fmt.Sprintf("must be between 1 and %d bytes, got %d", maxOutputLimit, c.MaxOutputSize)}
	}
	switch c.Mode {
	case modeDeny:
	case modeAllow:
		if len(c.Allow) == 0 {
			return nil, &tools.ConfigError{Path: "allow", Msg: "allow mode needs at least one command name; an empty list would refuse every command"}
		}
	default:
		return nil, &tools.ConfigError{Path: "mode", Msg: fmt.Sprintf("must be %q or %q, got %q", modeDeny, modeAllow, c.Mode)}
	}
	if c.Interpreters != interpretersOff && c.Interpreters != interpretersOn {
		return nil, &tools.ConfigError{Path: "interpreters", Msg: fmt.Sprintf("must be %q or %q, got %q", interpretersOff, interpretersOn, c.Interpreters)}
	}
	for i, name := range c.Allow {
		if name == "" || strings.ContainsAny(name, "/ \t\n") {
			return nil, &tools.ConfigError{Path: fmt.Sprintf("allow[%d]", i), Msg: fmt.Sprintf("%q is not a command name (no paths or spaces)", name)}
		}
	}
	for i, p := range c.Deny {
		if _, err := parsePattern(p); err != nil {
			return nil, &tools.ConfigError{Path: fmt.Sprintf("deny[%d]", i), Msg: err.Error(), Err: err}
		}
	}
	for i, p := range c.DenyArgs {
		if err := checkArgPattern(p); err != nil {
			return nil, &tools.ConfigError{Path: fmt.Sprintf("denyArgs[%d]", i), Msg: err.Error(), Err: err}
		}
	}
	for i, g := range c.AllowGroups {
		if !slices.Contains(groupNames(), g) {
			return nil, &tools.ConfigError{Path: fmt.Sprintf("allowGroups[%d]", i), Msg: fmt.Sprintf("unknown deny group %q; known groups: %s", g, strings.Join(groupNames(), ", "))}
		}
	}
	dialects, err := shellDialects(c.ShellPath)
	if err != nil {
		return nil, &tools.ConfigError{Path: "shellPath", Msg: err.Error(), Err: err}
	}
	s.shellDialects = dialects
	for _, name := range slices.Sorted(maps.Keys(c.Env)) {
		if !envNamePattern.MatchString(name) {
			return nil, &tools.ConfigError{Path: "env." + name, Msg: "is not a valid environment variable name"}
		}
		if why, bad := forbiddenEnvName(name); bad {
			return nil, &tools.ConfigError{Path: "env." + name, Msg: "may not be set: " + why}
		}
	}
	return s, nil
}

// shellDialects checks that path names a shell the policy can parse for, and
// returns the dialects to parse with. /bin/sh is often a symlink; both its
// own name and the name of what it points to count, because a copy of bash
// installed as sh still parses like bash.
func shellDialects(path string) ([]dialect, error) {
	if path == "" {
		return nil, fmt.Errorf("is required")
	}
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%q must be an absolute path", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("%q is not an executable file", path)
	}
	var out []dialect
	for _, n := range shellAliases(path) {
		d, ok := dialectsForShell(n)
		if !ok || !topLevelShells[n] {
			return nil, fmt.Errorf("%q is %s, which is not a supported shell; use one of sh, dash, ash, bash, ksh, mksh", path, n)
		}
		out = appendDialects(out, d...)
	}
	return out, nil
}

// shellAliases returns the names a shell binary goes by: its own, and that
// of the file it links to.
func shellAliases(path string) []string {
	names := []string{filepath.Base(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil && filepath.Base(real) != names[0] {
		names = append(names, filepath.Base(real))
	}
	return names
}

// shMayBeBash reports whether "sh" on this system may be bash (or another
// shell that evaluates strings in arithmetic): true unless /bin/sh links to
// a shell known not to.
func shMayBeBash() bool {
	real, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		return true
	}
	switch filepath.Base(real) {
	case "dash", "ash", "busybox", "posh", "yash":
		return false
	}
	return true
}

// topLevelShells are the shells shellPath may name. zsh is left out: its
// glob qualifiers and = expansion run commands from words the parser treats
// as plain text.
var topLevelShells = map[string]bool{"sh": true, "dash": true, "ash": true, "bash": true, "ksh": true, "mksh": true}

// SandboxMode is the kernel confinement a bash tool configured with raw
// gives its commands: its sandbox field, or the process default
// (sandbox.DefaultMode) when it sets none. A host checks it against its
// sandbox floor before building the tool.
func SandboxMode(raw json.RawMessage) (sandbox.Mode, error) {
	cfg := defaultConfig
	if err := tools.DecodeConfig(raw, &cfg); err != nil {
		return "", err
	}
	m, err := sandbox.ParseMode(cfg.Sandbox)
	if err != nil {
		return "", &tools.ConfigError{Path: "sandbox", Msg: err.Error(), Err: err}
	}
	return m, nil
}
