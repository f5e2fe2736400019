package tools

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sync"
)

// Definition describes a built-in tool: how to make an instance from its
// config, and how to describe both to people and editors. It is modelled on
// Caddy's module registration: a name, a factory and a config schema.
type Definition struct {
	// Name is the builtin name used in the tools array and, by default, the
	// name the model sees.
	Name string
	// Description is one line for people (tool listings, the editor).
	Description string
	// ConfigSchema is the JSON Schema of the config object (see SchemaFor).
	ConfigSchema json.RawMessage
	// ArgsSchema is the JSON Schema of the call arguments.
	ArgsSchema json.RawMessage
	// New makes an instance from a config object (may be empty). It must
	// reject bad config with a *ConfigError naming the field; it must never
	// fall back to defaults silently. Stateless tools may return a shared
	// instance.
	New func(bc BuildContext, config json.RawMessage) (Tool, error)
}

// BuildContext is what a factory may use besides its own config.
type BuildContext struct {
	// WorkDir is the workspace directory used when the config names none.
	// Empty means the process's working directory.
	WorkDir string
	// Secrets registers values the scrubber must redact from every output
	// of the run (API keys a tool was configured with, for example).
	Secrets SecretRegistrar
	// ServerPaths are the files and folders of the server running the
	// agent (its chains folder, data directory, ...), which no call may
	// change, and the secret ones read (see ServerPath).
	ServerPaths []ServerPath
}

// SecretRegistrar receives secret values to scrub.
type SecretRegistrar interface {
	AddSecrets(values ...string)
}

// Registry holds built-in tool definitions by name.
type Registry struct {
	mu   sync.RWMutex
	defs map[string]Definition
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{defs: map[string]Definition{}} }

// Builtins is the process-wide registry that built-in tools register into
// from their package init. Embedders add their own tools to it with
// Register, or build a private Registry.
var Builtins = NewRegistry()

// Register adds d to the Builtins registry.
func Register(d Definition) error { return Builtins.Register(d) }

// MustRegister is Register for package init: it panics on a duplicate.
func MustRegister(d Definition) {
	if err := Builtins.Register(d); err != nil {
		panic(err)
	}
}

// MaxNameLen is the longest tool name the model may see (OpenAI's limit).
const MaxNameLen = 64

// NamePattern is what a tool name the model sees must match (the OpenAI
// function-name rule).
var NamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Register adds d. A duplicate name, an invalid name or a missing factory is
// an error.
func (r *Registry) Register(d Definition) error {
	if !NamePattern.MatchString(d.Name) {
		return fmt.Errorf("tools: invalid builtin name %q: must match %s", d.Name, NamePattern)
	}
	if d.New == nil {
		return fmt.Errorf("tools: builtin %q has no factory", d.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.defs[d.Name]; dup {
		return fmt.Errorf("tools: builtin %q is already registered", d.Name)
	}
	r.defs[d.Name] = d
	return nil
}

// Lookup returns the definition named name.
func (r *Registry) Lookup(name string) (Definition, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.defs[name]
	return d, ok
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.defs))
}

// List returns the definitions sorted by name.
func (r *Registry) List() []Definition {
	names := r.Names()
	out := make([]Definition, 0, len(names))
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, n := range names {
		out = append(out, r.defs[n])
	}
	return out
}
