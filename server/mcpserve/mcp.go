// Package mcpserve is ruleagent's MCP server: the chains of a store (its
// Host) as MCP tools, with list_rule_chains, get_rule_chain and
// save_rule_chain, over streamable HTTP (/mcp) and stdio. It speaks the
// 2026-07-28 revision (stateless requests, input_required, the tasks
// extension) and the 2025-11-25 one (sessions, elicitation), through
// mcp-go.
package mcpserve

import (
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/ruleagent/ruleagent/state/tasks"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Options configure the MCP server over a store.
type Options struct {
	// Version is reported as serverInfo.version; the module's version
	// from the build information by default.
	Version string
	// Logger receives what the server cannot tell a client, such as a
	// chain whose tool name is taken. slog.Default() when nil.
	Logger *slog.Logger
	// TextProgressInterval is the least time between two progress
	// notifications about streamed text or reasoning (tool calls and
	// nodes are always reported). 250ms when zero.
	TextProgressInterval time.Duration
	// InputTimeout is how long a run that asked a 2026-07-28 client for
	// input waits for the client to retry with the answer before it is
	// cancelled. 10 minutes when zero.
	InputTimeout time.Duration
	// MaxWaitingInput bounds the runs waiting for their clients' input;
	// a question beyond it fails the call. 100 when zero.
	MaxWaitingInput int
	// Tasks keeps the state of MCP tasks (the tasks extension): memory
	// when nil; the state file under --data or the sessions' Redis in
	// serve, so that every replica reads every task.
	Tasks tasks.Store
	// TaskTTL is how long a task is kept after its last change. 1 hour
	// when zero.
	TaskTTL time.Duration
	// MaxTasks bounds the tasks running in this process; a call beyond it
	// answers a tool error. 100 when zero.
	MaxTasks int
}

// Defaults of Options.
const (
	// defaultTextProgressInterval keeps a fast stream from flooding a
	// client with notifications while still showing that the answer is
	// being written.
	defaultTextProgressInterval = 250 * time.Millisecond
	DefaultInputTimeout         = 10 * time.Minute
	defaultMaxWaitingInput      = 100
)

// New returns the MCP service over host: an MCP server exposing the host's
// chains as tools, and its transports (Endpoint, ServeStdio): every
// enabled agent chain, and every chain marked additionalInfo.mcp
// (except chains whose parameters other chains bind: see boundParams),
// named by ToolName, plus list_rule_chains, get_rule_chain and
// save_rule_chain. The chain tools follow the store: deploying, reloading
// or removing a chain updates them, and clients get tools/list_changed.
//
// A chain tool runs the chain with the call's arguments as input and
// answers with the chain's final message. A chain that fails answers
// isError with the error (its secrets redacted), never a protocol error.
// When the client asks for progress, the run's events and nodes become
// notifications/progress; when it cancels the call, the run is cancelled.
// When a node asks for a person's input (package ask), the client is
// asked: see chainRun.
//
// It serves protocol versions 2026-07-28 (stateless), 2025-11-25 and the
// earlier ones mcp-go knows, each request in its own era.
func New(s Host, o Options) *Service {
	if o.Version == "" {
		o.Version = moduleVersion()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.TextProgressInterval <= 0 {
		o.TextProgressInterval = defaultTextProgressInterval
	}
	if o.InputTimeout <= 0 {
		o.InputTimeout = DefaultInputTimeout
	}
	if o.MaxWaitingInput <= 0 {
		o.MaxWaitingInput = defaultMaxWaitingInput
	}
	srv := mcpserver.NewMCPServer("ruleagent", o.Version,
		mcpserver.WithToolCapabilities(true),
		mcpserver.WithExtensions(map[string]any{TasksExtension: map[string]any{}}),
		mcpserver.WithRecovery(),
		mcpserver.WithInstructions(mcpInstructions(s.ReadOnly())))
	waiting, err := newWaitingRuns(o.InputTimeout, o.MaxWaitingInput)
	if err != nil {
		// crypto/rand does not fail on the platforms Go supports.
		panic(err)
	}
	ct := &chainTools{store: s, host: gosdkHost{srv}, opts: o, waiting: waiting,
		byChain: map[string]exposedChain{}, byName: map[string]string{}, withheld: map[string]bool{}, untold: map[string][]exposureNote{}}
	if ct.tasks, err = newMCPTasks(o.Tasks, o.TaskTTL, o.InputTimeout, o.MaxTasks, o.Version, ct.outcome); err != nil {
		panic(err) // crypto/rand does not fail either
	}
	ct.tasks.tools = ct
	ct.publishCatalog()
	// Watch first, then expose what is already deployed: a chain deployed
	// in between is updated twice, never missed.
	s.OnChange(ct.update)
	for _, info := range s.List() {
		ct.update(info.ID)
	}
	return &Service{mcp: srv, mcpTools: ct}
}

// moduleVersion is the main module's version, "dev" for a local build.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// mcpInstructions is what the server tells clients it offers.
func mcpInstructions(readOnly bool) string {
	const runs = "Each tool runs a RuleGo rule chain: an AI agent or a business chain. "
	if readOnly {
		return runs + "list_rule_chains and get_rule_chain read the chains themselves; this server does not deploy chains."
	}
	return runs + "list_rule_chains, get_rule_chain and save_rule_chain read and hot-deploy the chains themselves."
}
