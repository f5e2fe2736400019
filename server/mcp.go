package server

import (
	"context"
	"io"
	"log"
	"net/http"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server/mcpserve"
	"github.com/ruleagent/ruleagent/state/checkpoint"
)

// MCPOptions configure the MCP server over a store (see package mcpserve).
type MCPOptions = mcpserve.Options

// NewMCPServer returns an MCP server exposing the store's chains as tools
// (see mcpserve.New), served by the caller: what keeps a chain from being
// offered is logged from now on.
func NewMCPServer(s *Store, o MCPOptions) *mcpserver.MCPServer {
	svc := mcpserve.New(mcpHost{s}, o)
	svc.Serving()
	return svc.Server()
}

// MCP returns the store's MCP server, the one registered as components.SelfMCPUDF.
func (s *Store) MCP() *mcpserver.MCPServer { return s.mcp.Server() }

// MCPHTTP is the store's MCP server over streamable HTTP, to mount at /mcp.
// It serves 2026-07-28 clients (stateless POSTs, subscriptions/listen) and
// 2025-11-25 ones (sessions) side by side. The server's browser-origin
// guard (guard.go, the one every route of Handler goes through) protects
// it: a Host that is not localhost or an IP address gets 403 (DNS
// rebinding), and so does a POST or DELETE from a page of another origin,
// or a POST whose body is not JSON. The transport is made once per store,
// and Close ends its sessions. Asking for it (or for Handler, which mounts
// it) means the tools are served: from then on the store logs why a chain
// is not offered (its parameters are bound by another chain, its tool name
// is taken), once per decision.
//
// The standalone GET event stream is refused (405, which the protocol
// allows). mcp-go v1.2.1 feeds it and every POST's response stream from one
// queue per session, so a call's progress notifications would be split
// between two streams and reach the client out of order, while progress
// must only go up. Without it, a call's notifications travel on the call's
// own response stream, in order. tools/list_changed still reaches every
// client: the one that saved a chain on that call's stream, the others on
// the stream of their next request.
func (s *Store) MCPHTTP() http.Handler {
	return newGuard(nil, nil).wrap(s.mcp.Endpoint())
}

// CloseMCPSessions ends the MCP sessions served over HTTP, closing their
// open event streams, so that an http.Server's Shutdown does not wait for
// clients that listen forever. The transport keeps serving new requests.
func (s *Store) CloseMCPSessions() { s.mcp.CloseSessions() }

// ServeStdio serves the store's MCP server on in and out, one JSON-RPC
// message per line (ruleagent mcp --stdio), until in ends or ctx is done
// (see mcpserve.Service.ServeStdio).
func (s *Store) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, errLog *log.Logger) error {
	return s.mcp.ServeStdio(ctx, in, out, errLog)
}

// mcpHost is the store as the MCP service's Host.
type mcpHost struct{ *Store }

// Globals implements mcpserve.Host.
func (h mcpHost) Globals() map[string]string { return h.cfg.Properties }

// Run implements mcpserve.Host.
func (h mcpHost) Run(ctx context.Context, req mcpserve.RunRequest) (mcpserve.RunResult, error) {
	res, err := h.Store.Run(ctx, RunRequest{ChainID: req.ChainID, Input: req.Input, Metadata: req.Metadata, Source: req.Source,
		Sink: req.Sink, Owner: req.Owner, StartAt: req.StartAt, Interruptible: req.Interruptible, Traceparent: req.Traceparent, Tracestate: req.Tracestate})
	return mcpResult(res), err
}

// Checkpoints implements mcpserve.Host.
func (h mcpHost) Checkpoints() checkpoint.Store { return h.checkpoints }

// Replica implements mcpserve.Host.
func (h mcpHost) Replica() string { return h.replica }

// Paused implements mcpserve.Host.
func (h mcpHost) Paused(ctx context.Context, runID string) (*checkpoint.Checkpoint, *checkpoint.State, error) {
	return h.paused(ctx, runID)
}

// DropPaused implements mcpserve.Host.
func (h mcpHost) DropPaused(ctx context.Context, cp *checkpoint.Checkpoint) error {
	return h.dropPaused(ctx, cp)
}

// Claim implements mcpserve.Host: the answers as resume entries, on the
// run's own scope.
func (h mcpHost) Claim(ctx context.Context, runID string, answers []mcpserve.InterruptAnswer) (mcpserve.Claimed, error) {
	entries := make([]ResumeEntry, len(answers))
	for i, a := range answers {
		entries[i] = ResumeEntry{InterruptID: a.InterruptID, Status: a.Status, Payload: a.Payload}
	}
	r, err := h.claim(ctx, entries, resumeScope{runID: runID})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// GoOn implements mcpserve.Host.
func (h mcpHost) GoOn(ctx context.Context, c mcpserve.Claimed, sink events.Sink) (mcpserve.RunResult, error) {
	res, err := h.goOn(ctx, c.(*resumption), sink, "", "")
	return mcpResult(res), err
}

// mcpResult is what the MCP service reads of a run's result.
func mcpResult(res RunResult) mcpserve.RunResult {
	return mcpserve.RunResult{RunID: res.RunID, Msg: res.Msg, Relation: res.Relation, Outcome: res.Outcome,
		Interrupts: res.Interrupts, Asked: res.Asked, Traceparent: res.Traceparent, Tracestate: res.Tracestate,
		Usage: res.Usage, Cost: res.Cost, Currency: res.Currency}
}
