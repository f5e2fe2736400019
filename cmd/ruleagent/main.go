// Command ruleagent serves, runs, validates and inspects agent rule chains.
//
//	ruleagent [serve] [--addr 127.0.0.1:8080] [--chains DIR] [--data DIR] [--global k=v ...]
//	ruleagent run CHAIN [--input TEXT|-] [--json]
//	ruleagent mcp --stdio [--chains DIR] [--global k=v ...]
//	ruleagent validate FILE...
//	ruleagent tools [--json]
//	ruleagent tools call NAME --config JSON --args JSON
//	ruleagent sessions list|show|export|delete|model [ID] [--server URL | --data DIR]
//	ruleagent keys create|list|revoke [--user U] [ID] [--server URL | --data DIR]
//	ruleagent usage [--by user] [--since 7d] [--server URL | --data DIR]
//	ruleagent version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/ruleagent/ruleagent/tools/scrub"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitRefused = 3
)

// usageError is a command-line mistake: it exits with code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "serve the chains folder over HTTP (the default command)", runServe},
		{"run", "run a chain once, streaming it to the terminal", runRun},
		{"validate", "check chain files statically", runValidate},
		{"mcp", "serve the chains as MCP tools over stdio (for desktop clients)", runMCP},
		{"tools", "list tool types and built-in tools, or call one", runTools},
		{"sessions", "list, show, export and delete agents' sessions, or switch a session's model", runSessions},
		{"keys", "create, list and revoke per-user API keys (serve --auth keys)", runKeys},
		{"usage", "totals of LLM calls, tokens, cost and tool time, by run, thread, user, chain, model or day", runUsage},
		{"runs", "list the runs a server recorded, or export one (its record and events) to a file", runRuns},
		{"replay", "replay an exported run offline against its recorded LLM answers and tool results", runReplay},
		{"version", "print the version", runVersion},
	}
}

func main() {
	guardEnvironment()
	ctx, stop := notifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches a command line and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := "serve"
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		printUsage(stdout)
		return exitOK
	}
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		err := c.run(ctx, args, stdin, stdout, stderr)
		return exitCode(err, stderr, cliScrubber(args))
	}
	fmt.Fprintf(stderr, "ruleagent: unknown command %q\n\n", name)
	printUsage(stderr)
	return exitUsage
}

// exitCode prints err on stderr, with the secrets of this process and
// anything that looks like a credential (an LLM key quoted in a provider's
// 401 message, a URL's password) scrubbed, and returns the exit code.
func exitCode(err error, stderr io.Writer, sc *scrub.Scrubber) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	var ee *exitError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ruleagent: %s (see ruleagent --help)\n", sc.Scrub(err.Error()))
		return exitUsage
	case errors.As(err, &ee):
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintf(stderr, "ruleagent: %s\n", sc.Scrub(ee.err.Error()))
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "ruleagent: %s\n", sc.Scrub(err.Error()))
	return exitFailure
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: ruleagent [command] [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'ruleagent COMMAND --help' for a command's flags.")
	fmt.Fprintln(w, "LLM settings come from OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL")
	fmt.Fprintln(w, "(as ${global.llm_url}, ${global.api_key}, ${global.model}), RULEAGENT_GLOBAL_<K>=v or --global k=v.")
}
