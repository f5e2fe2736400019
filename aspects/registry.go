package aspects

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Factory makes an aspect from its JSON config (which may be empty).
type Factory func(config json.RawMessage) (Aspect, error)

var (
	mu        sync.RWMutex
	factories = map[string]Factory{}
	global    []Aspect
)

// RegisterFactory makes an aspect available by name to the `aspects` field
// of an agent node's JSON config. A duplicate name is an error.
func RegisterFactory(name string, f Factory) error {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := factories[name]; dup {
		return fmt.Errorf("aspects: %q is already registered", name)
	}
	factories[name] = f
	return nil
}

// New makes the aspect registered under name.
func New(name string, config json.RawMessage) (Aspect, error) {
	mu.RLock()
	f, ok := factories[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown aspect %q (registered: %v)", name, Names())
	}
	return f(config)
}

// Names lists the registered aspect names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Sorted(maps.Keys(factories))
}

// Use adds process-wide aspects: they apply to every agent node initialised
// afterwards, before the node's own. This is how a Go program that embeds
// ruleagent intercepts every run.
func Use(as ...Aspect) {
	mu.Lock()
	defer mu.Unlock()
	global = append(global, as...)
}

// Global returns the process-wide aspects.
func Global() []Aspect {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(global)
}
