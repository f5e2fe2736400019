package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// Provider builds the tools of a non-builtin tool type (rulechain, agent,
// mcp). One spec may expand into several tools (an MCP server's tools).
type Provider interface {
	Build(ctx context.Context, spec Spec, env BuildEnv) ([]Tool, error)
}

// BuildEnv is what building a tool set needs besides the specs.
type BuildEnv struct {
	// Registry resolves builtin names; nil means Builtins.
	Registry *Registry
	// WorkDir is the default workspace of file tools and bash.
	WorkDir string
	// Secrets receives secret values found in tool config, for scrubbing.
	Secrets SecretRegistrar
	// ServerPaths are the server's own paths, which tools must not let
	// the model change (see BuildContext.ServerPaths).
	ServerPaths []ServerPath
	// Providers build the other tool types, keyed by type.
	Providers map[string]Provider

	// Refresh replaces the tools a spec expanded into, after the set was
	// built: an MCP server announcing new tools, a sub-agent's target chain
	// redeployed. Build sets it for each spec it hands to a provider; the
	// new tools are visible from the next LLM turn. Names must stay unique
	// across the set, or the refresh is refused.
	Refresh func(tools []Tool) error
	// AddCloser registers something Set.Close must close (a provider's
	// shared client, for example). Build sets it.
	AddCloser func(io.Closer)
}

// ErrNotBuilt is BuildEnv.Refresh's answer while Build is still running: a
// provider whose tools change during the build tries again afterwards.
var ErrNotBuilt = errors.New("the tool set is not built yet")

// Entry is one tool of a Set, with what the wrapper needs to call it.
type Entry struct {
	// Group is the tools-array entry the tool came from, e.g. "tools[2]".
	Group    string
	Tool     Tool
	Info     Info
	Type     string
	TargetID string
	Timeout  time.Duration
	// ResponseSchema, when set, makes every call a form a person answers.
	ResponseSchema json.RawMessage
	// Ref is what tool policies know of the tool.
	Ref     policy.Tool
	schema  *Schema
	metrics entryMetrics
}

type entryMetrics struct {
	ok, failed prometheus.Counter
	duration   prometheus.Observer
	bytes      prometheus.Counter
}

// Set is the tools of one agent node. It is safe for concurrent use.
type Set struct {
	cat     atomic.Pointer[catalog]
	mu      sync.Mutex // serialises refreshes and closing
	closers []io.Closer
	specs   map[string]Spec
	order   []string // groups in declaration order
}

type catalog struct {
	entries []*Entry
	byName  map[string]*Entry
	names   []string
	// toolsJSON is the OpenAI `tools` array, encoded once: re-encoding the
	// schemas on every request was a large share of the existing
	// implementation's CPU. spans[i] is where entries[i] sits in it, so
	// that the part a policy allows is cut from it without encoding.
	toolsJSON []byte
	spans     [][2]int
	prompters []prompter
}

type prompter struct {
	p   PromptContributor
	ref policy.Tool
}

// Build makes the tool set of a tools array. Every error is a *ConfigError
// located at its `tools[i]` path. On error, tools already made are closed.
func Build(ctx context.Context, specs []Spec, env BuildEnv) (*Set, error) {
	if env.Registry == nil {
		env.Registry = Builtins
	}
	s := &Set{specs: map[string]Spec{}}
	var entries []*Entry
	fail := func(err error) (*Set, error) {
		s.Close()
		return nil, err
	}
	for i, spec := range specs {
		path := fmt.Sprintf("tools[%d]", i)
		s.specs[path], s.order = spec, append(s.order, path)
		penv := env
		penv.Refresh = func(tools []Tool) error { return s.refresh(path, tools) }
		penv.AddCloser = func(c io.Closer) {
			s.mu.Lock()
			s.closers = append(s.closers, c)
			s.mu.Unlock()
		}
		made, err := buildSpec(ctx, spec, penv)
		if err != nil {
			return fail(Prefix(path, err))
		}
		for _, t := range made {
			if c, ok := t.(io.Closer); ok {
				s.closers = append(s.closers, c)
			}
			e, err := newEntry(path, t, spec)
			if err != nil {
				return fail(Prefix(path, err))
			}
			entries = append(entries, e)
		}
	}
	cat, err := newCatalog(entries)
	if err != nil {
		return fail(err)
	}
	s.cat.Store(cat)
	return s, nil
}

func buildSpec(ctx context.Context, spec Spec, env BuildEnv) ([]Tool, error) {
	if spec.Type != TypeBuiltin {
		p := env.Providers[spec.Type]
		if p == nil {
			return nil, &ConfigError{Path: "type", Msg: fmt.Sprintf("tool type %q is not available here", spec.Type)}
		}
		return p.Build(ctx, spec, env)
	}
	def, ok := env.Registry.Lookup(spec.Name)
	if !ok {
		return nil, &ConfigError{Path: "name", Msg: fmt.Sprintf("unknown builtin %q (available: %s)", spec.Name, strings.Join(env.Registry.Names(), ", "))}
	}
	t, err := def.New(BuildContext{WorkDir: env.WorkDir, Secrets: env.Secrets, ServerPaths: env.ServerPaths}, spec.Config)
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			return nil, Prefix("config", err)
		}
		return nil, &ConfigError{Path: "config", Msg: err.Error(), Err: err}
	}
	return []Tool{t}, nil
}

func newEntry(group string, t Tool, spec Spec) (*Entry, error) {
	info := t.Info()
	if spec.Type == TypeBuiltin && spec.Description != "" {
		// A spec may describe a builtin in the words of its agent.
		info.Description = spec.Description
	}
	if !NamePattern.MatchString(info.Name) {
		return nil, &ConfigError{Path: "name", Msg: fmt.Sprintf("tool name %q is not valid (letters, digits, _ and -, at most 64)", info.Name)}
	}
	if len(info.Parameters) == 0 {
		info.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	schema, err := CompileSchema(info.Parameters)
	if err != nil {
		return nil, &ConfigError{Path: "parameters", Msg: fmt.Sprintf("tool %s: %v", info.Name, err)}
	}
	timeout := spec.Timeout.D()
	if timeout == 0 && (spec.Type == TypeRuleChain || spec.Type == TypeAgent) {
		timeout = DefaultChainTimeout
	}
	ref := policy.Tool{Name: info.Name, Kind: spec.Type}
	if spec.Type == TypeMCP {
		ref.Server = policy.ServerOf(info.Name)
	}
	e := &Entry{Group: group, Tool: t, Info: info, Type: spec.Type, TargetID: spec.TargetID, Timeout: timeout, Ref: ref, schema: schema,
		ResponseSchema: spec.ResponseSchema}
	e.metrics = entryMetrics{
		ok:       metrics.ToolCalls.WithLabelValues(info.Name, "ok"),
		failed:   metrics.ToolCalls.WithLabelValues(info.Name, "error"),
		duration: metrics.ToolDuration.WithLabelValues(info.Name),
		bytes:    metrics.ToolOutputBytes.WithLabelValues(info.Name),
	}
	return e, nil
}

func newCatalog(entries []*Entry) (*catalog, error) {
	c := &catalog{entries: entries, byName: make(map[string]*Entry, len(entries)), names: make([]string, len(entries)),
		spans: make([][2]int, len(entries))}
	b := []byte{'['}
	for i, e := range entries {
		if _, dup := c.byName[e.Info.Name]; dup {
			return nil, &ConfigError{Path: "tools", Msg: fmt.Sprintf("two tools are named %q; names the model sees must be unique (rename one with \"name\")", e.Info.Name)}
		}
		c.byName[e.Info.Name] = e
		c.names[i] = e.Info.Name
		if p, ok := e.Tool.(PromptContributor); ok {
			c.prompters = append(c.prompters, prompter{p: p, ref: e.Ref})
		}
		if i > 0 {
			b = append(b, ',')
		}
		c.spans[i][0] = len(b)
		b = append(b, `{"type":"function","function":{"name":`...)
		b = events.AppendString(b, e.Info.Name)
		b = append(b, `,"description":`...)
		b = events.AppendString(b, e.Info.Description)
		b = append(b, `,"parameters":`...)
		b = append(b, e.Info.Parameters...)
		b = append(b, `}}`...)
		c.spans[i][1] = len(b)
	}
	c.toolsJSON = append(b, ']')
	return c, nil
}

// Len is the number of tools.
func (s *Set) Len() int {
	if s == nil || s.cat.Load() == nil {
		return 0
	}
	return len(s.cat.Load().entries)
}

// Entries returns the tools in declaration order.
func (s *Set) Entries() []*Entry {
	if s == nil || s.cat.Load() == nil {
		return nil
	}
	return s.cat.Load().entries
}

// Lookup finds a tool by the name the model sees.
func (s *Set) Lookup(name string) *Entry {
	if s == nil || s.cat.Load() == nil {
		return nil
	}
	return s.cat.Load().byName[name]
}

// Names lists the tool names in declaration order, whatever a policy
// says (see Offered for what the model may see).
func (s *Set) Names() []string {
	if s == nil || s.cat.Load() == nil {
		return nil
	}
	return slices.Clone(s.cat.Load().names)
}

// ToolsJSON is the OpenAI `tools` request array, encoded once.
func (s *Set) ToolsJSON() []byte {
	if s == nil || s.cat.Load() == nil {
		return nil
	}
	return s.cat.Load().toolsJSON
}

// SystemPrompt collects what the tools add to the system prompt.
func (s *Set) SystemPrompt(ctx context.Context) string { return s.SystemPromptFor(ctx, nil) }

// SystemPromptFor collects what the tools run r's policy allows add to the
// system prompt: a denied tool says nothing to the model.
func (s *Set) SystemPromptFor(ctx context.Context, r *Run) string {
	if s == nil || s.cat.Load() == nil {
		return ""
	}
	var rs *policy.Restrictions
	if r != nil {
		rs = r.Policy
	}
	var parts []string
	for _, p := range s.cat.Load().prompters {
		if !rs.Decide(p.ref).Allowed() {
			continue
		}
		if t := strings.TrimSpace(p.p.SystemPrompt(ctx)); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// refresh replaces the tools of one group, keeping declaration order. The
// tools it replaces are not closed: their provider owns them.
func (s *Set) refresh(group string, tools []Tool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cat.Load()
	if old == nil {
		return ErrNotBuilt
	}
	spec := s.specs[group]
	var fresh []*Entry
	for _, t := range tools {
		e, err := newEntry(group, t, spec)
		if err != nil {
			return Prefix(group, err)
		}
		fresh = append(fresh, e)
	}
	var entries []*Entry
	for _, g := range s.order {
		if g == group {
			entries = append(entries, fresh...)
			continue
		}
		for _, e := range old.entries {
			if e.Group == g {
				entries = append(entries, e)
			}
		}
	}
	cat, err := newCatalog(entries)
	if err != nil {
		return err
	}
	s.cat.Store(cat)
	return nil
}

// Close closes every tool that holds resources (workspaces, MCP clients,
// processes). It is safe to call more than once.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	closers := s.closers
	s.closers = nil
	s.mu.Unlock()
	var errs []error
	for _, c := range closers {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
