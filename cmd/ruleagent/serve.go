package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/ruleagent/ruleagent/server"
)

func runServe(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	chains := fs.String("chains", "chains", "folder of chain files")
	data := fs.String("data", "data", "folder for run data")
	sandboxMode := fs.String("sandbox", "", "default kernel confinement of bash commands: required, best-effort or off (default best-effort)")
	token := fs.String("token", os.Getenv("RULEAGENT_TOKEN"), "bearer token required by the API (RULEAGENT_TOKEN); mandatory off loopback")
	var globalsF globalFlag
	fs.Var(&globalsF, "global", "set ${global.k} (k=v, repeatable)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usagef("%v", err)
	}
	if !server.IsLoopback(*addr) && *token == "" {
		return usagef("--addr %s is not loopback-only: set --token (or RULEAGENT_TOKEN) so the API is not open to the network", *addr)
	}
	if err := os.MkdirAll(*data, 0o755); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	if err := setSandboxDefault(*sandboxMode, *data); err != nil {
		return usagef("--sandbox: %v", err)
	}
	store := openStore(*chains, globalsF, stderr, "runs")
	defer store.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: server.Handler(server.Options{Store: store, Token: *token}), ReadHeaderTimeout: 10 * time.Second}
	// MCP clients keep an event stream open; end their sessions so that
	// Shutdown does not wait for them.
	srv.RegisterOnShutdown(store.CloseMCPSessions)
	fmt.Fprintf(stdout, "ruleagent serving %s on http://%s\n", *chains, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
