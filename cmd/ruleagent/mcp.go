package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"

	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/state/tasks"
)

// runMCP serves the chains as MCP tools over stdio, for desktop clients that
// start the server themselves: clients of the stateless 2026-07-28 revision
// and of the 2025-11-25 handshake alike, each request in its own era (see
// server.NewMCPServer). stdout carries only protocol messages: everything
// else goes to stderr. When stdin ends, the store closes, which cancels the
// runs still waiting for a client's input.
func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stdio := fs.Bool("stdio", false, "serve MCP over stdin and stdout (required; HTTP clients use /mcp of 'ruleagent serve')")
	chains := fs.String("chains", "chains", "folder of chain files")
	readOnly := fs.Bool("read-only", false, "do not offer save_rule_chain: the client runs and reads chains, never deploys them")
	var globalsF globalFlag
	fs.Var(&globalsF, "global", "set ${global.k} (k=v, repeatable)")
	data := fs.String("data", "data", "keep the MCP tasks (when given) and record the calls into the usage ledger (when --data, --prices or --budgets is given) in the embedded store DATA/sessions.db")
	sb := addSandboxFlags(fs)
	var usageF usageFlags
	usageF.register(fs)
	var otelF otelFlags
	otelF.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: ruleagent mcp --stdio [--chains DIR] [--read-only] [--data DIR] [--prices FILE] [--budgets JSON] [--sandbox M] [--allow-sandbox-off] [--global k=v]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usagef("%v", err)
	}
	if !*stdio {
		return usagef("mcp needs --stdio (over HTTP, 'ruleagent serve' answers MCP at /mcp)")
	}
	if fs.NArg() > 0 {
		return usagef("mcp takes no arguments, got %q", fs.Args())
	}
	floor, err := sb.floor(nil)
	if err != nil {
		return err
	}
	if err := setSandboxDefault(floor.Mode, ""); err != nil {
		return usagef("--sandbox: %v", err)
	}
	defer keepStdoutForProtocol(stdout, stderr)()
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	stopTracing, err := otelF.start(ctx, logger)
	if err != nil {
		return err
	}
	defer stopTracing()
	// With --data, the MCP tasks are kept in its state file (a client that
	// starts this command again reads the results of the tasks that
	// ended), beside the usage ledger; else in memory.
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var state sessions.Store
	var taskStore tasks.Store
	if given["data"] {
		s, err := sessions.Open(ctx, "bolt", *data)
		if errors.Is(err, sessions.ErrLocked) {
			return fmt.Errorf("--data: %w\n(a server keeps its state there: give this command another --data)", err)
		}
		if err != nil {
			return fmt.Errorf("--data: %w", err)
		}
		defer s.Close()
		state = s
		if taskStore, err = mcpTaskStore(s); err != nil {
			return err
		}
	}
	usage, closeUsage, err := usageF.openCLI(ctx, fs, state, *data, logger)
	if err != nil {
		return err
	}
	// Deferred before the store's Close, so it runs after it: the last
	// call's records are written before the ledger stops.
	defer closeUsage()

	owned := serverPaths(ownedPaths{chains: *chains, data: *data, prices: usageF.prices, budgets: usageF.budgets})
	store := openStore(*chains, globalsF, floor, owned, stderr, "agent calls", *readOnly, usage, taskStore)
	defer store.Close()
	// ServeStdio returns nil at the end of stdin (the client went away) and
	// cancels the calls still running.
	if err := store.ServeStdio(ctx, stdin, stdout, log.New(stderr, "ruleagent mcp: ", 0)); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// keepStdoutForProtocol sends the process's stray output (os.Stdout, and
// the log package, which slog's default logger writes through) to stderr
// while stdout carries the protocol, and returns what restores them. A
// single line printed by a library on stdout would corrupt the client's
// stream.
func keepStdoutForProtocol(stdout, stderr io.Writer) (restore func()) {
	prevLog := log.Writer()
	log.SetOutput(stderr)
	prevStdout := os.Stdout
	if f, ok := stdout.(*os.File); ok && f == os.Stdout {
		if e, ok := stderr.(*os.File); ok {
			os.Stdout = e
		}
	}
	return func() {
		os.Stdout = prevStdout
		log.SetOutput(prevLog)
	}
}
