package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/demo"
	"github.com/ruleagent/ruleagent/server"
	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

func runServe(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	chains := fs.String("chains", "chains", "folder of chain files (watched: edits are deployed)")
	data := fs.String("data", "data", "folder for run data (the embedded session store is sessions.db in it, the runs' events and paused runs state.db)")
	sessionStore := fs.String("session-store", "bolt", "where agents' sessions are kept: bolt (DATA/sessions.db), bolt:PATH, memory, or redis://host:port/db (shared by several servers)")
	token := fs.String("token", os.Getenv("RULEAGENT_TOKEN"), "bearer token required by the API (RULEAGENT_TOKEN); mandatory off loopback")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	grace := fs.Duration("grace", 30*time.Second, "on shutdown, how long runs in progress may go on before they are cancelled")
	drainDelay := fs.Duration("drain-delay", 0, "on shutdown, how long the server keeps accepting connections while draining (/readyz answers draining, new runs get 503) before it stops, so a load balancer that polls readiness sees it; counted in --grace")
	redisWait := fs.Duration("redis-wait", 0, "with a Redis --session-store: how long start-up waits for Redis to answer (0: until it does)")
	maxBody := fs.Int64("max-body", server.DefaultMaxBody, "largest request body accepted, in bytes")
	hideActivity := fs.Bool("hide-tool-activity", false, "leave the agent's tool calls out of /v1/chat/completions answers (a request may still ask with tool_activity: true)")
	retryWindow := fs.Duration("retry-window", server.DefaultRetryWindow, "how long /v1/chat/completions answers a request identical to one before (same body, same caller) from the first attempt instead of running it again; 0 turns it off (an Idempotency-Key still counts)")
	policyF := fs.String("policy", os.Getenv("RULEAGENT_POLICY"), "server-wide tool policy, binding every agent: a JSON object such as '{\"deny\":[\"group:runtime\"]}' or the path of a JSON file (RULEAGENT_POLICY)")
	readOnly := fs.Bool("read-only", false, "run the chains but refuse to change them over the API and MCP (PUT, DELETE, save_rule_chain): only the watched chains folder changes them")
	auditF := fs.String("audit", "", "folder of the audit log (JSON lines, one file a day); default <data>/audit, \"off\" writes none")
	rejoinGrace := fs.Duration("rejoin-grace", server.DefaultRejoinGrace, "how long a run (run and AG-UI routes) goes on after its client went away, for it to rejoin; 0 cancels it at once")
	var idF identityFlags
	idF.register(fs)
	sb := addSandboxFlags(fs)
	var usageF usageFlags
	usageF.register(fs)
	var recordF recordFlags
	recordF.register(fs)
	var globalsF globalFlag
	var corsF, epTypes, epBind, hostsF listFlag
	fs.Var(&hostsF, "allowed-hosts", "host names the server answers to besides localhost and IP addresses, e.g. the name a reverse proxy forwards (comma-separated or repeated; *.domain for its sub-domains; * for any); default $RULEAGENT_ALLOWED_HOSTS")
	fs.Var(&epTypes, "endpoint-types", "endpoint types chains may start (comma-separated or repeated; * for all); default http, ws, net, schedule")
	fs.Var(&epBind, "endpoint-bind", "hosts listening endpoints may bind besides loopback (comma-separated or repeated; * for any)")
	fs.Var(&globalsF, "global", "set ${global.k} (k=v, repeatable)")
	var otelF otelFlags
	otelF.register(fs)
	fs.Var(&corsF, "cors-origin", "allow browser pages from this origin to call the API (repeatable; * for any); CORS is off without it")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usagef("%v", err)
	}
	if !server.IsLoopback(*addr) && *token == "" && idF.auth == "" {
		return usagef("--addr %s is not loopback-only: set --token (or RULEAGENT_TOKEN), or --auth, so the API is not open to the network", *addr)
	}
	if len(hostsF) == 0 {
		_ = hostsF.Set(os.Getenv("RULEAGENT_ALLOWED_HOSTS"))
	}
	hostsF = append(hostsF, addrName(*addr)...)
	logger, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return usagef("%v", err)
	}
	slog.SetDefault(logger)
	pf, err := server.LoadPolicyFile(*policyF)
	if err != nil {
		return usagef("--policy: %v", err)
	}
	floor, err := sb.floor(pf.Sandbox)
	if err != nil {
		return err
	}
	if err := chainsFolder(*chains); err != nil {
		return err
	}
	// Deferred first, so it runs last: every run's spans have ended.
	stopTracing, err := otelF.start(ctx, logger)
	if err != nil {
		return err
	}
	defer stopTracing()
	if err := os.MkdirAll(*data, 0o755); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	g := processGlobals(globalsF)
	var fl *fleet
	var sess sessions.Store
	if isRedisSpec(*sessionStore) {
		if fl, err = openFleet(ctx, *sessionStore, *redisWait, stderr, logger); err != nil {
			return err
		}
		defer fl.close()
		// A --read-only replica deploys what its folder holds (a
		// deploy by git pull on every machine): the fleet's chain store
		// is for replicas whose chains change over the API.
		fl.shareChains = !*readOnly
		if fl.shareChains {
			if err := fl.seed(ctx, *chains, logger); err != nil {
				return err
			}
		}
		sess = fl.sessions()
	} else if sess, err = sessions.Open(ctx, *sessionStore, *data); err != nil {
		return fmt.Errorf("--session-store: %w", err)
	}
	defer sess.Close()
	usage, err := usageF.open(sess, logger)
	if err != nil {
		return err
	}
	if usage != nil {
		// Deferred before the store's Close, so it runs after it: the
		// last run's records are written before the ledger stops.
		defer usage.Close()
	}
	recording, err := recordF.open(sess)
	if err != nil {
		return err
	}
	verifier, err := idF.verifier(sess)
	if err != nil {
		return err
	}
	if err := setSandboxDefault(floor.Mode, *data); err != nil {
		return usagef("--sandbox: %v", err)
	}
	gov, closeAudit, err := governance(pf, *auditF, *data, logger)
	if err != nil {
		return err
	}
	gov.Sandbox = floor
	gov.ServerPaths = serverPaths(ownedPaths{chains: *chains, data: *data, sessionStore: *sessionStore, audit: *auditF,
		policy: *policyF, prices: usageF.prices, budgets: usageF.budgets})
	// Deferred before the store's Close, so it runs after it: every run
	// has ended before the audit log is closed.
	defer closeAudit()
	cfg := server.WithGovernance(server.NewConfig(g), gov)
	components.RegisterSessions(&cfg, sess)
	replicaID := ""
	if fl != nil {
		replicaID = fl.replica
	}
	fleet, err := openFleetState(ctx, *sessionStore, *data, replicaID)
	if err != nil {
		return err
	}
	// Deferred before the store's Close, so it runs after it: the last
	// run's events are written before the log stops.
	defer fleet.Close()
	mcpTasks, err := mcpTaskStore(sess)
	if err != nil {
		return err
	}
	rejoin := *rejoinGrace
	if rejoin == 0 {
		rejoin = -1 // RunLog's 0 is its default
	}
	storeOpts := server.StoreOptions{Logger: logger, ReadOnly: *readOnly,
		EndpointPolicy: server.EndpointPolicy{Types: epTypes, Bind: epBind}, Ledger: usage,
		Checkpoints: fleet.checkpoints, Replica: fleet.replica, MCPTasks: mcpTasks, Recording: recording,
		RunLog: server.RunLog{Events: fleet.events, Replica: fleet.replica, Alive: fleet.registry.Alive, Control: fleet.bus,
			RejoinGrace: rejoin}}
	if fl != nil && fl.shareChains {
		storeOpts.Chains = fl.chains
	}
	store, loadErrs := server.OpenStoreWith(*chains, cfg, storeOpts)
	defer store.Close()
	for _, e := range loadErrs {
		logger.Error("chain file not loaded", "err", e)
	}
	if fl != nil && fl.shareChains {
		// The fleet's chain store is the source: chains change through
		// the API of any replica, and the folder only seeded it.
		syncCtx, stopSync := context.WithCancel(context.Background())
		synced := make(chan struct{})
		go func() { defer close(synced); store.SyncChains(syncCtx) }()
		defer func() { stopSync(); <-synced }()
		fl.watchStore(store)
		awaitCaughtUp(ctx, store, 10*time.Second)
	} else if err := store.Watch(); err != nil {
		logger.Warn("the chains folder is not watched: edits need a restart", "folder", *chains, "err", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	opts := server.Options{Store: store, Token: *token, CORSOrigins: corsF, AllowedHosts: hostsF, MaxBodyBytes: *maxBody,
		// demoModel tells the editor (and anyone) that agents answer from
		// the built-in demo model; verifiedIdentity, that the server
		// decides who calls (--auth), not the user id a request names.
		Health: func() map[string]any {
			return map[string]any{"sandbox": sandbox.Describe(), "demoModel": demo.IsURL(g["llm_url"]), "verifiedIdentity": verifier != nil}
		},
		HideToolActivity: *hideActivity, RetryWindow: *retryWindow, Logger: logger, Identity: verifier}
	if *retryWindow <= 0 {
		opts.RetryWindow = -1
	}
	if fl != nil {
		opts.Readiness = fl.model
	}
	if ks, ok := sess.(sessions.KeyStore); ok {
		opts.Keys = ks
	}
	srv := &http.Server{Handler: server.Handler(opts), ReadHeaderTimeout: 10 * time.Second}
	// MCP clients keep an event stream open; end their sessions so that
	// Shutdown does not wait for them.
	srv.RegisterOnShutdown(store.CloseMCPSessions)
	banner(stdout, ln.Addr().String(), *chains, store, len(loadErrs), g, *token != "", fleet.where())
	governanceBanner(stdout, gov, *policyF)
	usageBanner(stdout, usage, &usageF)
	recordBanner(stdout, recording, &recordF)
	identityBanner(stdout, verifier, &idF)
	if fl != nil {
		fl.banner(stdout)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	return shutdown(srv, store, logger, *grace, *drainDelay)
}

// chainsFolder checks serve's --chains: a folder that does not exist is a
// typo far more often than the wish for a server with no chains.
func chainsFolder(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usagef("--chains %s: no such folder (create it, or give the folder that holds your chains)", dir)
	case err != nil:
		return fmt.Errorf("--chains: %w", err)
	case !fi.IsDir():
		return usagef("--chains %s: not a folder", dir)
	}
	return nil
}

// addrName is the host name --addr binds, when it is a name rather than an
// IP address: the server answers to it.
func addrName(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" || net.ParseIP(host) != nil {
		return nil
	}
	return []string{host}
}

// shutdown drains (/readyz answers draining, new runs get 503), keeps
// accepting connections for drainDelay (within grace) so that a load
// balancer polling /readyz takes the server out, then stops accepting
// requests, lets the runs in progress finish for grace, then
// cancels those left (each ends with its terminal event, outcome
// cancelled) and waits for their streams to close. Paused runs are not in
// progress: they are checkpoints already, and the next process on the
// same --data (or any replica of a fleet) resumes them.
func shutdown(srv *http.Server, store *server.Store, logger *slog.Logger, grace, drainDelay time.Duration) error {
	store.Drain()
	n := store.Runs().Active()
	logger.Info("shutting down", "runs in progress", n, "grace", grace, "drain delay", drainDelay)
	graceCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if drainDelay > 0 {
		select {
		case <-time.After(drainDelay):
		case <-graceCtx.Done():
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- srv.Shutdown(context.Background()) }()
	if !store.Runs().Wait(graceCtx) {
		logger.Warn("grace period over: cancelling the runs left", "runs", store.Runs().CancelAll(runs.ErrShutdown))
	}
	store.Live().Close()
	select {
	case err := <-closed:
		return err
	case <-time.After(10 * time.Second):
		return srv.Close()
	}
}

// banner says where the server is, what it loaded, and whether runs can
// work.
func banner(w io.Writer, addr, chains string, store *server.Store, failed int, g map[string]string, token bool, where string) {
	fmt.Fprintf(w, "ruleagent serving %s on http://%s\n", chains, addr)
	list := store.List()
	agents := 0
	for _, c := range list {
		if c.IsAgent {
			agents++
		}
	}
	fmt.Fprintf(w, "  chains: %d loaded (%d agents)", len(list), agents)
	if failed > 0 {
		fmt.Fprintf(w, ", %d failed to load (see the log above)", failed)
	}
	fmt.Fprintln(w)
	llmLine(w, g, agents, store.WithoutLLM(), store.OnDemoModel())
	if token {
		fmt.Fprintln(w, "  auth: bearer token required")
	}
	if store.ReadOnly() {
		fmt.Fprintln(w, "  read-only: chains change only through the chains folder")
	}
	if ss := store.Sessions(); ss != nil {
		fmt.Fprintf(w, "  sessions: %s\n", ss.Name())
	}
	if where != "" {
		fmt.Fprintf(w, "  run events: %s\n", where)
	}
	fmt.Fprintf(w, "  editor: http://%s/   API: http://%s/api/v1/chains   OpenAI: http://%s/v1   MCP: http://%s/mcp\n", addr, addr, addr, addr)
}

// llmLine tells the truth about the LLM: which chains' runs will fail
// until one is set; then the built-in demo model when chains answer from
// it, the global LLM, or that the chains set their own.
func llmLine(w io.Writer, g map[string]string, agents int, without, onDemo []string) {
	global := g["llm_url"] != "" && g["model"] != ""
	demoGlobal := demo.IsURL(g["llm_url"])
	if len(without) > 0 {
		fmt.Fprintf(w, "  LLM: not configured for %s (%s): their runs will fail until you set OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL\n",
			count(strconv.Itoa(len(without)), "chain"), strings.Join(without, ", "))
		fmt.Fprintln(w, "       (or --global llm_url=... --global api_key=... --global model=...); everything else works")
	}
	switch {
	case len(onDemo) > 0 || demoGlobal && agents == 0:
		fmt.Fprintln(w, "  LLM: the built-in demo model (scripted answers marked "+demo.Marker+", no network): set OPENAI_BASE_URL, OPENAI_API_KEY")
		fmt.Fprintln(w, "       and OPENAI_MODEL (or --global llm_url=... --global model=...) for a real one; see README.md, \"LLM settings\"")
	case len(without) > 0:
	case global && !demoGlobal:
		fmt.Fprintf(w, "  LLM: %s, model %s\n", g["llm_url"], g["model"])
	case agents > 0 && demoGlobal:
		fmt.Fprintln(w, "  LLM: set by each agent chain (its url and model); new chains get the built-in demo model, or set OPENAI_BASE_URL and OPENAI_MODEL")
	case agents > 0:
		fmt.Fprintln(w, "  LLM: set by each agent chain (its url and model); new chains need their own, or OPENAI_BASE_URL and OPENAI_MODEL")
	default:
		fmt.Fprintln(w, "  LLM: not configured: runs of agent chains will fail until you set OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL")
		fmt.Fprintln(w, "       (or --global llm_url=... --global api_key=... --global model=...); everything else works")
	}
}

// newLogger makes the process logger.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// listFlag collects a repeated flag's values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}
