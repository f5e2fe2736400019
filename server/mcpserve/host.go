package mcpserve

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server/catalog"
	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/state/checkpoint"
)

// Host is what the MCP service needs of the chain store it serves
// (server.Store): its chains, running them, and deploying them.
type Host interface {
	// List describes every deployed chain; DSL and File give one's
	// definition and the file it came from.
	List() []catalog.ChainInfo
	DSL(id string) ([]byte, bool)
	File(id string) (string, bool)
	// OnChange calls fn with a chain's id each time it is deployed,
	// reloaded or removed, until stop is called.
	OnChange(fn func(id string)) (stop func())
	// Engine is chain id's engine as deployed now.
	Engine(id string) (types.RuleEngine, bool)
	// RunChain runs chain id once and waits for it to end (see
	// server.Store.RunChain).
	RunChain(ctx context.Context, id, input string, md map[string]string, sink events.Sink) (runs.Result, error)
	// SaveFrom validates and deploys a chain saved during ctx (by an agent
	// through the self MCP server, or by a client); an invalid one is
	// refused with a *catalog.InvalidChainError.
	SaveFrom(ctx context.Context, id string, dsl []byte) (catalog.ChainInfo, error)
	// ReadOnly: the store deploys nothing (save_rule_chain is not offered).
	ReadOnly() bool
	// Draining: the store refuses new runs (runs.ErrDraining).
	Draining() bool
	// Globals are the chains' ${global.x} values, to find the secrets a
	// chain's error may quote.
	Globals() map[string]string

	// Run runs a chain once and waits for it to end or pause (see
	// server.Store.Run).
	Run(ctx context.Context, req RunRequest) (RunResult, error)
	// Checkpoints is the store of paused runs every replica shares, and
	// Replica this process's name in it: a chain's question to a
	// 2026-07-28 client is kept there (see chainTools.pause).
	Checkpoints() checkpoint.Store
	Replica() string
	// Paused is a run paused on interrupts (an agent's approval or form):
	// its checkpoint and state. DropPaused cancels it.
	Paused(ctx context.Context, runID string) (*checkpoint.Checkpoint, *checkpoint.State, error)
	DropPaused(ctx context.Context, cp *checkpoint.Checkpoint) error
	// Claim checks answers to every open interrupt of paused run runID
	// and claims the run, so that nobody else goes on with it; GoOn goes
	// on with it, until it ends or pauses again.
	Claim(ctx context.Context, runID string, answers []InterruptAnswer) (Claimed, error)
	GoOn(ctx context.Context, c Claimed, sink events.Sink) (RunResult, error)
}

// RunRequest is a run the service asks of its host.
type RunRequest struct {
	ChainID  string
	Input    string
	Metadata map[string]string
	// Source is "mcp"; Owner the verified caller (see identity).
	Source, Owner string
	Sink          events.Sink
	// StartAt enters the chain at nodes that asked a question, with their
	// messages (an answered input pause); empty: from the start.
	StartAt []components.StartPoint
	// Interruptible: the run pauses on an approval or form (a checkpoint)
	// instead of asking through the service's approver.
	Interruptible bool
	// Traceparent, Tracestate: with StartAt, the paused segment's trace
	// context (RunResult.Traceparent), which the run continues.
	Traceparent, Tracestate string
}

// RunResult is how a run ended or paused.
type RunResult struct {
	RunID    string
	Msg      types.RuleMsg
	Relation string
	// Outcome is success, cancelled, error or interrupt (OutcomeInterrupt).
	Outcome string
	// Interrupts are what a run paused on interrupts waits for.
	Interrupts []events.Interrupt
	// Asked are the nodes whose questions wait for an answer (the run is
	// then paused with no Interrupts).
	Asked []components.AskedNode
	// Traceparent, Tracestate: with Asked, the run's trace context, kept
	// in its input pause.
	Traceparent, Tracestate string
	// Usage is the run's token usage per provider and model, sub-agents
	// included, and Cost what it cost in Currency (empty without a price
	// table), as its terminal event says.
	Usage          []events.TokenUsage
	Cost, Currency string
}

// OutcomeInterrupt is the outcome of a paused run.
const OutcomeInterrupt = "interrupt"

// InterruptAnswer answers one interrupt of a paused run (as AG-UI's resume
// entry does): resolved with its payload, or cancelled.
type InterruptAnswer struct {
	InterruptID string
	Status      string // resolved or cancelled
	Payload     json.RawMessage
}

// Claimed is a paused run that Claim gave this service, to hand to GoOn
// unchanged: the run's id and the caller who started it.
type Claimed interface {
	RunID() string
	Owner() string
}

// The chain catalog's and the run registry's names, as this package uses
// them.
type (
	ChainInfo         = catalog.ChainInfo
	InvalidChainError = catalog.InvalidChainError
	Result            = runs.Result
)

// Service is the MCP server over a Host and its transports: streamable
// HTTP (Endpoint) and stdio (ServeStdio).
type Service struct {
	mcp      *mcpserver.MCPServer
	mcpTools *chainTools

	// mcpHTTP is the streamable HTTP transport, made on first use;
	// mcpCalls are the calls over it not answered yet (see openCalls).
	mcpHTTPMu sync.Mutex
	mcpHTTP   *mcpserver.StreamableHTTPServer
	mcpCalls  *openCalls
}

// Server is the MCP server itself, the one a store registers as
// components.SelfMCPUDF.
func (s *Service) Server() *mcpserver.MCPServer { return s.mcp }

// Serving says the tools are served from now on: the service logs why a
// chain is not offered as it is, once per decision (a process that serves
// no MCP, such as ruleagent run, has nothing to tell about it).
func (s *Service) Serving() { s.mcpTools.serving() }

// Offers reports whether chain id is offered as an MCP tool.
func (s *Service) Offers(id string) bool {
	_, ok := s.mcpTools.toolOf(id)
	return ok
}

// storeTimeout bounds a call to the checkpoint store made for a run whose
// request may already have ended.
const storeTimeout = 10 * time.Second

// errCheckpoints wraps a checkpoint store that failed.
var errCheckpoints = checkpoint.ErrUnavailable
