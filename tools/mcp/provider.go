package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ruleagent/ruleagent/tools"
)

// Options configure the provider of the mcp tool type.
type Options struct {
	// Self is this process's own MCP server, for server:"self" (nil: self
	// is unavailable, and a "self" entry fails to build).
	Self *server.MCPServer
	// HTTPClient makes the requests to http(s) servers (tests use it to
	// observe or forbid network use). It must have no overall Timeout:
	// event streams stay open, and calls are bounded by their own
	// timeouts. Nil gives each entry a client of its own, whose idle
	// connections are closed with the entry.
	HTTPClient *http.Client
	// Logger receives connection events: lost connections,
	// reconnections, changed tool lists. Nil means slog.Default().
	Logger *slog.Logger
}

// NewProvider returns the provider of the mcp tool type, for
// BuildEnv.Providers["mcp"].
func NewProvider(o Options) tools.Provider { return &provider{o: o} }

type provider struct{ o Options }

// Build connects to the entry's server (within connectTimeout), lists its
// tools and returns those the entry's filter selects. The connection stays
// open for the calls; BuildEnv.AddCloser closes it with the tool set. A
// server that cannot be reached fails the build only when the entry is
// required (or the failure is one no retry mends, such as a missing
// program); otherwise the entry starts with no tools and connects in the
// background.
func (p *provider) Build(ctx context.Context, spec tools.Spec, env tools.BuildEnv) ([]tools.Tool, error) {
	if env.AddCloser == nil {
		return nil, errors.New("mcp tools need BuildEnv.AddCloser to close their connection (build them with tools.Build)")
	}
	t, err := parseConfig(spec.Config, env.WorkDir)
	if err != nil {
		return nil, tools.Prefix("config", err)
	}
	if t.sandbox != nil {
		t.sandbox.serverPaths = env.ServerPaths
	}
	prefix, err := modelPrefix(spec.Name, t)
	if err != nil {
		return nil, err
	}
	if t.kind == kindSelf && p.o.Self == nil {
		return nil, &tools.ConfigError{Path: "config.server", Msg: `"self" needs this process's own MCP server, and none is available here`}
	}
	if env.Secrets != nil {
		env.Secrets.AddSecrets(t.secrets()...)
	}
	c := p.newConn(prefix, t, env.Refresh)
	s, err := c.connect(ctx)
	if err != nil && !t.required && !unfixable(err) && ctx.Err() == nil {
		env.AddCloser(c)
		c.wg.Add(1)
		go c.relist()
		c.startDegraded(err)
		return nil, nil
	}
	if err != nil {
		c.Close()
		return nil, &tools.ConfigError{Path: "config.server", Msg: fmt.Sprintf("cannot connect to MCP server %s: %v", t.describe(), err)}
	}
	made, fingerprint, err := c.tools.make(s.listed, true)
	if err != nil {
		s.close()
		c.Close()
		return nil, err
	}
	c.live = s
	c.tools.current = fingerprint
	env.AddCloser(c)
	c.wg.Add(1)
	go c.relist()
	return made, nil
}

// CheckSpec makes the static checks of an mcp entry (its config and the
// prefix of its tools' names) without connecting to the server, for
// `ruleagent validate`. Errors are *tools.ConfigError located in the entry,
// as Build reports them.
func CheckSpec(spec tools.Spec) error {
	t, err := parseConfig(spec.Config, "")
	if err != nil {
		return tools.Prefix("config", err)
	}
	_, err = modelPrefix(spec.Name, t)
	return err
}

// Describe tells a host what an mcp tools entry reaches, without
// connecting: the prefix of its tools' names, and whether it is this
// process's own server ("self").
func Describe(spec tools.Spec) (prefix string, self bool, err error) {
	t, err := parseConfig(spec.Config, "")
	if err != nil {
		return "", false, tools.Prefix("config", err)
	}
	prefix, err = modelPrefix(spec.Name, t)
	return prefix, t.kind == kindSelf, err
}

func (p *provider) newConn(prefix string, t *target, refresh func([]tools.Tool) error) *conn {
	log := p.o.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &conn{name: prefix, t: t, log: log, relistCh: make(chan struct{}, 1)}
	c.base, c.cancel = context.WithCancel(context.Background())
	hc := p.o.HTTPClient
	if hc == nil && t.kind == kindHTTP {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		c.ownHTTP = hc
	}
	c.dialer = &dialer{t: t, self: p.o.Self, http: hc, notify: c.onNotification, elicit: elicitation{server: prefix, calls: &c.calls},
		log: slog.New(demoted{log.Handler()}).With("mcpServer", prefix)}
	c.tools = &toolList{conn: c, prefix: prefix, filter: filter(t.filter), refresh: refresh, log: log}
	return c
}

// mcpTool is one tool of the server, as the model sees it.
type mcpTool struct {
	conn   *conn
	remote string // the tool's name on the server
	info   tools.Info
}

func (t *mcpTool) Info() tools.Info { return t.info }

// RemoteName is the tool's name on its server (the model sees it
// namespaced, see Info().Name).
func (t *mcpTool) RemoteName() string { return t.remote }

func (t *mcpTool) Call(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	return t.conn.call(ctx, t.remote, args)
}

// toolList turns the server's listings into the entry's tools, and hands
// a changed list to the agent's tool set.
type toolList struct {
	conn    *conn
	prefix  string
	filter  filter
	refresh func([]tools.Tool) error
	log     *slog.Logger
	// mu serialises updates, so that an older listing never replaces a
	// newer one.
	mu sync.Mutex
	// current fingerprints the tools last handed out, so that an unchanged
	// listing (a reconnection, a notification about other tools) does not
	// rebuild the agent's catalog.
	current string
}

// make maps a listing to tools. At build (strict), a tool name in the filter
// that the server does not have, and a tool whose input schema cannot be
// used, are errors; later they are logged (and the tool left out), so that
// one bad tool added by the server does not take the others away.
func (l *toolList) make(listed []mcp.Tool, strict bool) ([]tools.Tool, string, error) {
	names := make([]string, len(listed))
	for i, tl := range listed {
		names[i] = tl.Name
	}
	if missing := l.filter.unmatched(names); len(missing) > 0 {
		msg := fmt.Sprintf("%s: the server has no such tool (it has: %s)", quoteAll(missing), abbreviate(names, 30))
		if strict {
			return nil, "", &tools.ConfigError{Path: "config.tools", Msg: msg}
		}
		l.log.Warn("MCP server: tools named in the filter are gone", "server", l.prefix, "detail", msg)
	}
	var (
		made []tools.Tool
		fp   strings.Builder
	)
	for _, tl := range listed {
		if !l.filter.match(tl.Name) {
			continue
		}
		info, err := toolInfo(l.prefix, tl)
		if err != nil {
			if strict {
				return nil, "", &tools.ConfigError{Path: "config.tools", Msg: fmt.Sprintf("%v; leave the tool out with the tools filter", err)}
			}
			l.log.Warn("MCP server: tool left out", "server", l.prefix, "err", err)
			continue
		}
		made = append(made, &mcpTool{conn: l.conn, remote: tl.Name, info: info})
		fmt.Fprintf(&fp, "%s\x00%s\x00%s\x00%s\x01", tl.Name, info.Name, info.Description, info.Parameters)
	}
	return made, fp.String(), nil
}

// update hands a new listing to the agent's tool set when it changed. It
// returns tools.ErrNotBuilt, without logging, when the set is still being
// built.
func (l *toolList) update(listed []mcp.Tool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	made, fp, _ := l.make(listed, false)
	if fp == l.current || l.refresh == nil {
		return nil
	}
	if err := l.refresh(made); err != nil {
		if !errors.Is(err, tools.ErrNotBuilt) {
			l.log.Warn("MCP server: the changed tools could not be used", "server", l.prefix, "err", err)
		}
		return err
	}
	l.current = fp
	l.log.Info("MCP server: tools changed", "server", l.prefix, "tools", len(made))
	return nil
}

// toolInfo is what the model sees of a server's tool.
func toolInfo(prefix string, tl mcp.Tool) (tools.Info, error) {
	params := []byte(tl.RawInputSchema)
	if len(params) == 0 {
		schema := tl.InputSchema
		if schema.Type == "" {
			schema.Type = "object"
		}
		var err error
		if params, err = json.Marshal(schema); err != nil {
			return tools.Info{}, fmt.Errorf("tool %q: its input schema cannot be encoded: %w", tl.Name, err)
		}
	}
	if _, err := tools.CompileSchema(params); err != nil {
		return tools.Info{}, fmt.Errorf("tool %q: its input schema is unusable: %w", tl.Name, err)
	}
	desc := tl.Description
	if desc == "" {
		desc = tl.Title
	}
	if desc == "" {
		desc = tl.Annotations.Title
	}
	return tools.Info{Name: modelName(prefix, tl.Name), Description: desc, Parameters: params}, nil
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func abbreviate(names []string, n int) string {
	if len(names) == 0 {
		return "no tools"
	}
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
