package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

type closer struct {
	Tool
	closed *int
}

func (c closer) Close() error { *c.closed++; return nil }

// groupProvider expands a spec into tools named by its Name prefix, and
// keeps the refresh function for the test to call.
type groupProvider struct {
	refresh func([]Tool) error
	closed  int
}

func named(name string) Tool {
	return Func{Spec: Info{Name: name, Description: name}, Fn: func(context.Context, json.RawMessage) (Result, error) {
		return TextResult(name), nil
	}}
}

func (g *groupProvider) Build(_ context.Context, spec Spec, env BuildEnv) ([]Tool, error) {
	g.refresh = env.Refresh
	env.AddCloser(closer{closed: &g.closed})
	return []Tool{named(spec.Name + "__a")}, nil
}

func TestBuildRefreshAndClose(t *testing.T) {
	reg := NewRegistry()
	closed := 0
	_ = reg.Register(Definition{Name: "first", New: func(BuildContext, json.RawMessage) (Tool, error) {
		return closer{Tool: named("first"), closed: &closed}, nil
	}})
	gp := &groupProvider{}
	specs, err := ParseSpecs(json.RawMessage(`[{"type":"builtin","name":"first"},{"type":"mcp","name":"srv","config":{"server":"x"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	set, err := Build(context.Background(), specs, BuildEnv{Registry: reg, Providers: map[string]Provider{TypeMCP: gp}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Names(), ","); got != "first,srv__a" {
		t.Fatalf("names %s", got)
	}
	if err := gp.refresh([]Tool{named("srv__a"), named("srv__b")}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Names(), ","); got != "first,srv__a,srv__b" || !strings.Contains(string(set.ToolsJSON()), "srv__b") {
		t.Fatalf("after refresh: %s", got)
	}
	// A refresh that would collide is refused and changes nothing.
	if err := gp.refresh([]Tool{named("first")}); err == nil || strings.Join(set.Names(), ",") != "first,srv__a,srv__b" {
		t.Fatalf("colliding refresh: %v, names %v", err, set.Names())
	}
	if err := set.Close(); err != nil || closed != 1 || gp.closed != 1 {
		t.Fatalf("close: %v builtin=%d provider=%d", err, closed, gp.closed)
	}
	if err := set.Close(); err != nil || closed != 1 {
		t.Fatal("second Close must be a no-op")
	}
}

func TestBuildErrorsHavePaths(t *testing.T) {
	specs, _ := ParseSpecs(json.RawMessage(`[{"type":"builtin","name":"nope"}]`))
	_, err := Build(context.Background(), specs, BuildEnv{Registry: NewRegistry()})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Path != "tools[0].name" {
		t.Fatalf("%v", err)
	}
	specs, _ = ParseSpecs(json.RawMessage(`[{"type":"rulechain","name":"x","targetId":"y"}]`))
	if _, err := Build(context.Background(), specs, BuildEnv{}); !errors.As(err, &ce) || ce.Path != "tools[0].type" {
		t.Fatalf("%v", err)
	}
}

var _ io.Closer = closer{}
