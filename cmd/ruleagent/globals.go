package main

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/demo"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/server"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/state/tasks"
	"github.com/ruleagent/ruleagent/tools"
)

// globalFlag collects repeated --global k=v flags.
type globalFlag []string

func (g *globalFlag) String() string { return strings.Join(*g, ",") }

func (g *globalFlag) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want k=v, got %q", v)
	}
	*g = append(*g, v)
	return nil
}

// llmEnv maps the conventional OpenAI variables to the globals the example
// chains use.
var llmEnv = [][2]string{
	{"OPENAI_BASE_URL", "llm_url"},
	{"OPENAI_API_KEY", "api_key"},
	{"OPENAI_MODEL", "model"},
}

// globals resolves ${global.x} values, later sources winning:
// OPENAI_* variables, then RULEAGENT_GLOBAL_<K>=v (K lower-cased), then
// --global k=v flags.
func globals(environ []string, flags []string) map[string]string {
	g := map[string]string{}
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for _, m := range llmEnv {
		if v, ok := env[m[0]]; ok && v != "" {
			g[m[1]] = v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if name, ok := strings.CutPrefix(k, "RULEAGENT_GLOBAL_"); ok && name != "" {
			g[strings.ToLower(name)] = env[k]
		}
	}
	for _, f := range flags {
		k, v, _ := strings.Cut(f, "=")
		g[strings.TrimSpace(k)] = v
	}
	return g
}

// processGlobals resolves the globals of this process; with no LLM
// configured, the LLM globals name the built-in demo model.
func processGlobals(flags []string) map[string]string {
	g := globals(os.Environ(), flags)
	useDemoModel(g)
	return g
}

// openStore loads the chains folder for the long-running commands (serve,
// mcp): chains that fail to load are reported and left out, and the LLM
// is reported once: the demo model standing in for a missing one, and the
// chains whose runs will fail until one is set. usage is the ledger the
// runs are recorded in (nil: none); mcpTasks keeps the MCP tasks (nil:
// memory). owned are the paths of the process no agent may change.
func openStore(chains string, globalFlags []string, floor components.SandboxFloor, owned []tools.ServerPath, stderr io.Writer, whatFails string, readOnly bool, usage *ledger.Ledger, mcpTasks tasks.Store) *server.Store {
	g := processGlobals(globalFlags)
	cfg := server.WithGovernance(server.NewConfig(g), server.Governance{Sandbox: floor, ServerPaths: owned})
	// Agents with a session keep it for the life of the process.
	components.RegisterSessions(&cfg, sessions.NewMemory())
	// The store logs (reloads, the chains MCP withholds) to the command's
	// stderr, whatever the process's default logger is.
	store, errs := server.OpenStoreWith(chains, cfg, server.StoreOptions{ReadOnly: readOnly, Ledger: usage, MCPTasks: mcpTasks, Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	for _, e := range errs {
		fmt.Fprintf(stderr, "ruleagent: %v\n", e)
	}
	if demo.IsURL(g["llm_url"]) {
		fmt.Fprintf(stderr, "ruleagent: %s\n", demoNotice)
	}
	if without := store.WithoutLLM(); len(without) > 0 {
		fmt.Fprintf(stderr, "ruleagent: no LLM configured for %s: %s will fail until OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL (or --global llm_url=..., model=...) are set\n", strings.Join(without, ", "), whatFails)
	}
	return store
}
