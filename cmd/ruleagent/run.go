package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/demo"
	"github.com/ruleagent/ruleagent/server"
	"github.com/ruleagent/ruleagent/sessions"
)

func runRun(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	input := fs.String("input", "", "the input: text, JSON ({\"message\":...} or {\"messages\":[...]}), or - to read stdin")
	asJSON := fs.Bool("json", false, "print the AG-UI events as JSON lines instead of the terminal view")
	showMeta := fs.Bool("show-meta", false, "after the run, print the result message's metadata (terminal view)")
	chains := fs.String("chains", "", "folder of chains the run may call (default: the chain file's folder, or ./chains)")
	threadID := fs.String("thread", "", "thread id of the run (the session of agents with a thread scope)")
	userID := fs.String("user", "", "user id of the run (message metadata userId: the session of agents with a user scope)")
	sessionStore := fs.String("session-store", "memory", "where agents' sessions are kept: memory (gone when the command ends), bolt (DATA/sessions.db), bolt:PATH or redis://host:port/db")
	data := fs.String("data", "data", "folder of the embedded store (DATA/sessions.db): the bolt session store, and the usage ledger when --data is given")
	var globalsF, metaF globalFlag
	fs.Var(&globalsF, "global", "set ${global.k} (k=v, repeatable)")
	fs.Var(&metaF, "meta", "set message metadata, e.g. --meta userId=alice (k=v, repeatable)")
	sb := addSandboxFlags(fs)
	var usageF usageFlags
	usageF.register(fs)
	var otelF otelFlags
	otelF.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: ruleagent run CHAIN [--input TEXT|-] [--json] [--show-meta] [--chains DIR] [--thread ID] [--user ID] [--session-store SPEC] [--data DIR] [--prices FILE] [--budgets JSON] [--global k=v] [--meta k=v]")
		fmt.Fprintln(stderr, "CHAIN is a chain id from --chains or a path to a .json file.")
		fs.PrintDefaults()
	}
	chain, rest := splitPositional(args)
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usagef("%v", err)
	}
	if chain == "" && fs.NArg() > 0 {
		chain = fs.Arg(0)
	}
	if chain == "" {
		return usagef("run needs a CHAIN")
	}
	// Logs are notes on stderr, one human line each, never inside the
	// transcript's lines.
	notes := &noteSink{w: stderr}
	defer logNotes(notes)()
	floor, err := sb.floor(nil)
	if err != nil {
		return err
	}
	if err := setSandboxDefault(floor.Mode, ""); err != nil {
		return usagef("--sandbox: %v", err)
	}
	text, err := readInput(*input, stdin)
	if err != nil {
		return err
	}
	warnings := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	stopTracing, err := otelF.start(ctx, warnings)
	if err != nil {
		return err
	}
	defer stopTracing()

	dir, file := *chains, ""
	if strings.HasSuffix(chain, ".json") {
		file = chain
		if dir == "" {
			dir = filepath.Dir(chain)
		}
	} else if dir == "" {
		dir = "chains"
	}
	sess, err := sessions.Open(ctx, *sessionStore, *data)
	if err != nil {
		return fmt.Errorf("--session-store: %w", err)
	}
	defer sess.Close()
	usage, closeUsage, err := usageF.openCLI(ctx, fs, sess, *data, warnings)
	if err != nil {
		return err
	}
	// Deferred before the store's Close, so it runs after it: the run's
	// records are written before the ledger stops.
	defer closeUsage()
	g := processGlobals(globalsF)
	owned := ownedPaths{chains: *chains, chainFile: file, data: *data, sessionStore: *sessionStore, prices: usageF.prices, budgets: usageF.budgets}
	if owned.chains == "" && file == "" {
		owned.chains = dir
	}
	cfg := server.WithGovernance(server.NewConfig(g), server.Governance{Sandbox: floor, ServerPaths: serverPaths(owned)})
	components.RegisterSessions(&cfg, sess)
	store, loadErrs := server.OpenStoreWith(dir, cfg, server.StoreOptions{Ledger: usage})
	defer store.Close()
	id := chain
	if file != "" {
		if id, err = store.LoadFile(file); err != nil {
			return err
		}
	}
	if _, ok := store.Engine(id); !ok {
		for _, e := range loadErrs {
			fmt.Fprintf(stderr, "ruleagent: %v\n", e)
		}
		return fmt.Errorf("no chain %q in %s", id, dir)
	}
	if demo.IsURL(g["llm_url"]) && answersFromDemo(store, id) {
		fmt.Fprintf(stderr, "ruleagent: %s\n", demoNotice)
	}

	md := map[string]string{}
	for _, kv := range metaF {
		k, v, _ := strings.Cut(kv, "=")
		md[strings.TrimSpace(k)] = v
	}
	if *threadID != "" {
		md["threadId"] = *threadID
	}
	if *userID != "" {
		md["userId"] = *userID
	}
	req := server.RunRequest{ChainID: id, Input: text, Metadata: md, ThreadID: md["threadId"], Source: "cli"}
	return runAndShow(ctx, store, req, runView{asJSON: *asJSON, showMeta: *showMeta, notes: notes, stdout: stdout, stderr: stderr})
}

// explain adds what the user can do to common failures.
func explain(err error) error {
	var nl *agent.NoLLMError
	if errors.As(err, &nl) {
		return err
	}
	var le *agent.LLMError
	if errors.As(err, &le) && le.Status == 0 {
		return fmt.Errorf("%w\n(is the LLM server at %s running and reachable? set OPENAI_BASE_URL or the chain's url)", err, le.URL)
	}
	return err
}

// splitPositional lets the chain come before or after the flags.
func splitPositional(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

func readInput(in string, stdin io.Reader) (string, error) {
	if in == "" {
		if f, ok := stdin.(*os.File); !ok || isTerminal(f) {
			return "", usagef("give the input with --input TEXT, or pipe it in")
		}
		in = "-"
	}
	if in != "-" {
		return in, nil
	}
	b, err := io.ReadAll(io.LimitReader(stdin, 32<<20))
	if err != nil {
		return "", fmt.Errorf("reading stdin: %w", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", usagef("stdin was empty")
	}
	return string(b), nil
}
