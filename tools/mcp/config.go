package mcptool

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/ruleagent/ruleagent/tools"
)

// Config is the "config" object of a {"type": "mcp"} tools entry. It is
// decoded strictly over Defaults: a field left out keeps its default, and a
// field given explicitly is validated as given.
type Config struct {
	Server         string            `json:"server,omitempty" jsonschema:"The MCP server: \"self\" (this process's own MCP server, in process), an http:// or https:// URL (streamable HTTP, falling back to legacy SSE), or \"stdio:<command line>\" (a local process; the line is split like a shell would, but no shell runs and no variable is expanded). Give either server or command."`
	Command        string            `json:"command,omitempty" jsonschema:"A local stdio server's program, as an alternative to server: a path or a name looked up in PATH. Its arguments go in args."`
	Args           []string          `json:"args,omitempty" jsonschema:"Arguments of command, passed as they are."`
	Cwd            string            `json:"cwd,omitempty" jsonschema:"Working directory of a stdio server. Relative paths start at the agent's workspace; empty means the agent's workspace."`
	Env            map[string]string `json:"env,omitempty" jsonschema:"Variables added to a stdio server's environment, which otherwise holds only an allowlist taken from this process (PATH, HOME, USER, LANG, LC_*, TERM, TZ, TMPDIR, XDG_* and SSL_CERT_*). The values are registered as secrets, so they are scrubbed from every output."`
	Headers        map[string]string `json:"headers,omitempty" jsonschema:"HTTP headers sent with every request to an http(s) server, for example Authorization. The values are registered as secrets, so they are scrubbed from every output."`
	Transport      string            `json:"transport,omitempty" jsonschema:"For an http(s) server: auto (streamable HTTP, then legacy SSE at the same URL when the server answers the initialize POST with a 4xx status), streamable or sse."`
	Tools          []string          `json:"tools,omitempty" jsonschema:"The server's tools to offer the model, by name or glob (*, ?, [a-z], {a,b}). Empty offers them all. Every entry must match at least one of the server's tools when the agent starts."`
	Timeout        tools.Duration    `json:"timeout,omitempty" jsonschema:"Longest a tool call may take, in milliseconds or as a duration such as 30s. The entry's top-level timeout, when shorter, also applies."`
	ConnectTimeout tools.Duration    `json:"connectTimeout,omitempty" jsonschema:"Longest connecting may take: starting the process or reaching the URL, the initialize handshake and listing the tools. It bounds the connection made when the agent starts and every reconnection."`
	Sandbox        *StdioSandbox     `json:"sandbox,omitempty" jsonschema:"Confine a stdio server with the kernel sandbox (Landlock): its own paths and network settings. Without it the server runs unconfined."`
	Required       bool              `json:"required,omitempty" jsonschema:"When true, the agent fails to start if the server cannot be reached. When false (the default), the agent starts without the server's tools, logs a warning, and keeps trying in the background (1 s to 1 min apart); the tools appear from the turn after the server answers."`
}

// Defaults are the values of the fields a config leaves out.
var Defaults = Config{
	Transport:      transportAuto,
	Timeout:        tools.Duration(60 * time.Second),
	ConnectTimeout: tools.Duration(10 * time.Second),
}

// ConfigSchema documents the mcp tool type's config (for `ruleagent tools --json`).
func ConfigSchema() json.RawMessage { return tools.SchemaFor(Defaults) }

// The values of Config.Transport.
const (
	transportAuto       = "auto"
	transportStreamable = "streamable"
	transportSSE        = "sse"
)

// kind is how the client reaches the server.
type kind int

const (
	kindSelf kind = iota
	kindHTTP
	kindStdio
)

// target is a validated config: where the server is and how to talk to it.
type target struct {
	kind      kind
	url       string // kindHTTP
	transport string // kindHTTP: auto, streamable or sse
	command   string // kindStdio
	args      []string
	cwd       string
	cwdGiven  bool // cwd came from the config, not the workspace
	env       map[string]string
	headers   map[string]string
	sandbox   *stdioSandbox // kindStdio, when confined

	filter         []string
	timeout        time.Duration
	connectTimeout time.Duration
	required       bool
}

var (
	envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// headerNamePattern is RFC 9110's token.
	headerNamePattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// parseConfig decodes and validates a config. workDir is the agent's
// workspace, against which a relative cwd is resolved. Errors are
// *tools.ConfigError with paths relative to the config object.
func parseConfig(raw json.RawMessage, workDir string) (*target, error) {
	c := Defaults
	if err := tools.DecodeConfig(raw, &c); err != nil {
		return nil, err
	}
	t := &target{timeout: c.Timeout.D(), connectTimeout: c.ConnectTimeout.D(), required: c.Required}
	if t.timeout <= 0 {
		return nil, &tools.ConfigError{Path: "timeout", Msg: "must be longer than 0"}
	}
	if t.connectTimeout <= 0 {
		return nil, &tools.ConfigError{Path: "connectTimeout", Msg: "must be longer than 0"}
	}
	if err := t.parseServer(c); err != nil {
		return nil, err
	}
	if err := t.parseOptions(c, workDir); err != nil {
		return nil, err
	}
	for i, p := range c.Tools {
		if p == "" || !doublestar.ValidatePattern(p) {
			return nil, &tools.ConfigError{Path: fmt.Sprintf("tools[%d]", i), Msg: fmt.Sprintf("%q is not a valid tool name or glob", p)}
		}
	}
	t.filter = c.Tools
	return t, nil
}

// parseServer sets where the server is, from exactly one of server and command.
func (t *target) parseServer(c Config) error {
	server := strings.TrimSpace(c.Server)
	switch {
	case server != "" && c.Command != "":
		return &tools.ConfigError{Path: "command", Msg: "give either server or command, not both"}
	case server == "" && c.Command == "":
		return &tools.ConfigError{Path: "server", Msg: `missing: "self", an http(s) URL, or "stdio:<command line>" (or give command)`}
	case c.Command != "":
		if strings.TrimSpace(c.Command) != c.Command {
			return &tools.ConfigError{Path: "command", Msg: "must not start or end with spaces (arguments go in args)"}
		}
		t.kind, t.command, t.args = kindStdio, c.Command, c.Args
		return nil
	case len(c.Args) > 0:
		return &tools.ConfigError{Path: "args", Msg: `args go with command; with server, put them in the "stdio:" command line`}
	}
	if server == "self" {
		t.kind = kindSelf
		return nil
	}
	if line, ok := strings.CutPrefix(server, "stdio:"); ok {
		words, err := splitCommandLine(line)
		if err != nil {
			return &tools.ConfigError{Path: "server", Msg: err.Error(), Err: err}
		}
		t.kind, t.command, t.args = kindStdio, words[0], words[1:]
		return nil
	}
	u, err := url.Parse(server)
	if err != nil || u.Scheme == "" {
		return &tools.ConfigError{Path: "server", Msg: fmt.Sprintf(`%q is not "self", an http(s) URL or "stdio:<command line>"`, server)}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return &tools.ConfigError{Path: "server", Msg: fmt.Sprintf(`unknown scheme %q: use an http:// or https:// URL, "self", or "stdio:<command line>"`, u.Scheme)}
	}
	if u.Host == "" {
		return &tools.ConfigError{Path: "server", Msg: fmt.Sprintf("%q has no host", server)}
	}
	t.kind, t.url = kindHTTP, u.String()
	return nil
}

// parseOptions checks the fields that only apply to one kind of server.
func (t *target) parseOptions(c Config, workDir string) error {
	if t.kind != kindHTTP {
		if len(c.Headers) > 0 {
			return &tools.ConfigError{Path: "headers", Msg: "headers only apply to http(s) servers"}
		}
		if c.Transport != Defaults.Transport {
			return &tools.ConfigError{Path: "transport", Msg: "transport only applies to http(s) servers"}
		}
	}
	if t.kind != kindStdio {
		if len(c.Env) > 0 {
			return &tools.ConfigError{Path: "env", Msg: "env only applies to stdio servers"}
		}
		if c.Cwd != "" {
			return &tools.ConfigError{Path: "cwd", Msg: "cwd only applies to stdio servers"}
		}
		if c.Sandbox != nil {
			return &tools.ConfigError{Path: "sandbox", Msg: "sandbox only applies to stdio servers"}
		}
	}
	switch t.kind {
	case kindHTTP:
		switch c.Transport {
		case transportAuto, transportStreamable, transportSSE:
			t.transport = c.Transport
		default:
			return &tools.ConfigError{Path: "transport", Msg: fmt.Sprintf("unknown transport %q; one of auto, streamable, sse", c.Transport)}
		}
		for name, value := range c.Headers {
			if !headerNamePattern.MatchString(name) {
				return &tools.ConfigError{Path: "headers." + name, Msg: "not a valid HTTP header name"}
			}
			if strings.ContainsAny(value, "\r\n\x00") {
				return &tools.ConfigError{Path: "headers." + name, Msg: "a header value must not contain line breaks or NUL"}
			}
		}
		t.headers = c.Headers
	case kindStdio:
		for name, value := range c.Env {
			if !envNamePattern.MatchString(name) {
				return &tools.ConfigError{Path: "env." + name, Msg: "not a valid variable name (letters, digits and _, not starting with a digit)"}
			}
			if strings.ContainsRune(value, 0) {
				return &tools.ConfigError{Path: "env." + name, Msg: "a value must not contain NUL"}
			}
		}
		t.env = c.Env
		sb, err := checkSandbox(c.Sandbox)
		if err != nil {
			return err
		}
		t.sandbox = sb
		t.cwd = workDir
		if c.Cwd != "" {
			t.cwd, t.cwdGiven = c.Cwd, true
			if !filepath.IsAbs(c.Cwd) && workDir != "" {
				t.cwd = filepath.Join(workDir, c.Cwd)
			}
		}
	}
	return nil
}

// secrets are the config values the run must scrub from every output: header
// values (and the credential of an "Authorization: Bearer x" header on its
// own), env values, and a password in the URL.
func (t *target) secrets() []string {
	var out []string
	for _, v := range t.headers {
		out = append(out, v)
		if _, cred, ok := strings.Cut(v, " "); ok && strings.TrimSpace(cred) != "" {
			out = append(out, strings.TrimSpace(cred))
		}
	}
	for _, v := range t.env {
		out = append(out, v)
	}
	if u, err := url.Parse(t.url); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	return out
}

// describe names the server in messages to the model and the user. It shows
// no argument, header or query, which may hold secrets.
func (t *target) describe() string {
	switch t.kind {
	case kindSelf:
		return "self (in process)"
	case kindHTTP:
		u, err := url.Parse(t.url)
		if err != nil {
			return "http"
		}
		return u.Scheme + "://" + u.Host + u.Path
	default:
		return "stdio: " + filepath.Base(t.command)
	}
}
