package tools

import (
	"context"
	"encoding/json"

	"github.com/ruleagent/ruleagent/events"
)

// ChainInvoker runs other rule chains for rulechain and agent tools. The
// tools package declares it and knows nothing of RuleGo; the components
// package implements it on the rule engine pool.
type ChainInvoker interface {
	// Invoke runs a chain once and waits for it to end. It honours ctx: when
	// ctx is done the chain is cancelled, and Invoke returns ctx's error once
	// the chain has stopped (or a grace period has passed). A missing or
	// disabled chain is an error of kind ErrNotFound, returned at once.
	Invoke(ctx context.Context, req ChainRequest) (ChainResult, error)
	// Describe returns what a chain says about itself, for agent tools.
	Describe(id string) (ChainDesc, bool)
}

// ChainRequest is one chain run on behalf of a tool call.
type ChainRequest struct {
	ChainID string
	// Data is the message data: the tool's arguments as JSON.
	Data string
	// Metadata is the message metadata (the propagated allowlist, plus
	// parentRunId and parentToolCallId).
	Metadata map[string]string
	// Sink receives the events of the run (for an agent chain, its nested
	// run).
	Sink events.Sink
	// Steps receives the node steps of the run, as the caller sees them;
	// nil means Sink.
	Steps events.Sink
	// ToolCallID is the call the run belongs to, for attributing steps.
	ToolCallID string
	// Resume, when set, is the paused run of the chain this call started
	// before its run paused (see ChainPause): the chain goes on from it
	// instead of starting afresh. A chain run that pauses makes Invoke
	// return a *PauseError holding its ChainPause.
	Resume *ChainPause
}

// ChainResult is what a chain run produced.
type ChainResult struct {
	// Outputs are the data of the chain's end messages, in the order of the
	// end nodes in the chain definition (so a chain with several ends gives
	// the same result every time).
	Outputs []ChainOutput
}

// ChainOutput is one end of a chain run.
type ChainOutput struct {
	NodeID string `json:"node"`
	Data   string `json:"data"`
}

// ChainDesc is what a chain says about itself.
type ChainDesc struct {
	ID          string
	Name        string
	Description string
	// InputSchema is additionalInfo.inputSchema, if any.
	InputSchema json.RawMessage
	Disabled    bool
	// Version changes whenever the chain is redeployed.
	Version uint64
}

// PropagatedMetadata lists the parent message metadata a chain tool passes
// on to the chain it runs. Everything else stays with the parent: the
// target chain sees only identity and tracing, never the parent's internals.
var PropagatedMetadata = []string{
	"userId", "tenantId", "threadId", "sessionId", "sessionKey", MetaVerifiedUser,
	"traceId", "traceparent", "tracestate", "requestId", "locale",
}

// MetaVerifiedUser is the message metadata key in which a server names the
// verified user a run is for (only the server sets it: a caller's own is
// dropped); absent for the operator's token and unverified callers. The
// thread-scoped sessions of the run's agents, and of the agents it calls,
// are bound to it (sessions.Run.Owner).
const MetaVerifiedUser = "verifiedUser"
