package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/sessions"
)

// usageFlags are serve's ledger flags.
type usageFlags struct {
	prices, budgets, retention string
}

func (u *usageFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&u.prices, "prices", os.Getenv("RULEAGENT_PRICES"), "price table (YAML or JSON file) that turns tokens into cost (RULEAGENT_PRICES); see docs/prices.example.yaml")
	fs.StringVar(&u.budgets, "budgets", os.Getenv("RULEAGENT_BUDGETS"), "daily budgets per user and chain: a JSON object such as '{\"users\":{\"*\":{\"tokensPerDay\":200000}}}' or the path of a JSON file (RULEAGENT_BUDGETS)")
	fs.StringVar(&u.retention, "usage-retention", "90d", "how long the usage ledger keeps its records (e.g. 90d, 720h); off keeps no ledger")
}

// open opens the usage ledger beside the session store, or none with
// --usage-retention off.
func (u *usageFlags) open(sess sessions.Store, logger *slog.Logger) (*ledger.Ledger, error) {
	if u.retention == "off" {
		if u.prices != "" || u.budgets != "" {
			return nil, usagef("--prices and --budgets need the usage ledger: leave out --usage-retention off")
		}
		return nil, nil
	}
	retention, err := ledger.ParseAge(u.retention)
	if err != nil || retention <= 0 {
		return nil, usagef("--usage-retention %q: want a duration such as 90d or 720h, or off", u.retention)
	}
	o := ledger.Options{Retention: retention, Logger: logger}
	if u.prices != "" {
		if o.Prices, err = ledger.LoadPrices(u.prices); err != nil {
			return nil, usagef("--prices: %v", err)
		}
	}
	if o.Budgets, err = ledger.LoadBudgets(u.budgets); err != nil {
		return nil, usagef("--budgets: %v", err)
	}
	if o.Store, err = ledger.StoreFor(sess, retention); err != nil {
		return nil, err
	}
	l, err := ledger.New(o)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return l, nil
}

// usageBanner says where usage is kept, priced and bounded.
func usageBanner(w io.Writer, l *ledger.Ledger, u *usageFlags) {
	if l == nil {
		fmt.Fprintln(w, "  usage: not recorded (--usage-retention off)")
		return
	}
	fmt.Fprintf(w, "  usage: recorded in %s for %s", l.Store().Name(), u.retention)
	if p := l.Prices(); p != nil {
		fmt.Fprintf(w, ", priced by %s (%d models, %s", u.prices, len(p.Entries), p.Currency)
		if p.AsOf != "" {
			fmt.Fprintf(w, ", as of %s", p.AsOf)
		}
		fmt.Fprint(w, ")")
	} else {
		fmt.Fprint(w, ", no prices (--prices)")
	}
	if b := l.Budgets(); b != nil {
		fmt.Fprintf(w, ", daily budgets for %d users and %d chains", len(b.Users), len(b.Chains))
	}
	fmt.Fprintln(w)
}

const usageUsage = `Usage: ruleagent usage [--by DIM[,DIM]] [--since T] [--until T] [filters] [--json]

Totals of the usage ledger: LLM calls, tokens and cost, tool calls and time.
  --by       group by run, thread, user, chain, model, provider, day or source
  --since    from (default 7d): an age (7d, 36h), a day (2026-11-27) or a time (RFC 3339)
  --until    to (default now)
  --run, --thread, --user, --chain, --model   only these
  --limit N  at most N groups, the largest first

Where the ledger is:
  --server URL [--token T]         a running server's API (RULEAGENT_TOKEN)
  --data DIR --session-store SPEC  the store itself (default: bolt under ./data), when no server holds it
  --prices FILE                    (store mode) the price table, for the currency's name
`

func runUsage(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("usage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageUsage) }
	srv := fs.String("server", "", "a running server, e.g. http://127.0.0.1:8080")
	token := fs.String("token", os.Getenv("RULEAGENT_TOKEN"), "the server's bearer token")
	data := fs.String("data", "data", "the data folder of the bolt store")
	spec := fs.String("session-store", "bolt", "bolt, bolt:PATH or redis://host:port/db")
	prices := fs.String("prices", os.Getenv("RULEAGENT_PRICES"), "store mode: the price table, for the currency")
	by := fs.String("by", "", "group by (comma-separated): "+strings.Join(ledger.Dimensions, ", "))
	since := fs.String("since", "7d", "from: an age (7d), a day or a time")
	until := fs.String("until", "", "to (default now)")
	asJSON := fs.Bool("json", false, "print the JSON report")
	var f struct{ run, thread, user, chain, model string }
	fs.StringVar(&f.run, "run", "", "only this run")
	fs.StringVar(&f.thread, "thread", "", "only this thread")
	fs.StringVar(&f.user, "user", "", "only this user")
	fs.StringVar(&f.chain, "chain", "", "only this chain")
	fs.StringVar(&f.model, "model", "", "only this model")
	limit := fs.Int("limit", 0, "at most this many groups")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("usage takes no arguments, got %q", fs.Args())
	}
	var rep *ledger.Report
	var err error
	if *srv != "" {
		q := url.Values{"since": {*since}}
		for k, v := range map[string]string{"by": *by, "until": *until, "run": f.run, "thread": f.thread, "user": f.user, "chain": f.chain, "model": f.model} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if *limit > 0 {
			q.Set("limit", strconv.Itoa(*limit))
		}
		rep = &ledger.Report{}
		err = serverAPI(*srv, *token).do(ctx, http.MethodGet, "/api/v1/usage?"+q.Encode(), nil, rep)
	} else {
		rep, err = queryStore(ctx, *spec, *data, *prices, *by, *since, *until, *limit, ledger.Query{RunID: f.run, ThreadID: f.thread,
			UserID: f.user, ChainID: f.chain, Model: f.model})
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	printUsageReport(stdout, rep)
	return nil
}

// serverAPI is a client of a running server's API.
func serverAPI(server, token string) apiSource {
	if !strings.Contains(server, "://") {
		server = "http://" + server
	}
	return apiSource{base: strings.TrimRight(server, "/"), token: token, hc: &http.Client{Timeout: time.Minute}}
}

// queryStore reads the ledger in the store itself.
func queryStore(ctx context.Context, spec, data, pricesFile, by, since, until string, limit int, q ledger.Query) (*ledger.Report, error) {
	now := time.Now()
	var err error
	if q.Since, err = ledger.ParseTime(since, now); err != nil {
		return nil, usagef("--since: %v", err)
	}
	q.Until = now.Add(time.Second)
	if until != "" {
		if q.Until, err = ledger.ParseTime(until, now); err != nil {
			return nil, usagef("--until: %v", err)
		}
	}
	for _, b := range strings.Split(by, ",") {
		if b = strings.TrimSpace(b); b != "" {
			q.By = append(q.By, b)
		}
	}
	q.Limit = limit
	if err := q.Check(); err != nil {
		return nil, usagef("%v", err)
	}
	o := ledger.Options{}
	if pricesFile != "" {
		if o.Prices, err = ledger.LoadPrices(pricesFile); err != nil {
			return nil, usagef("--prices: %v", err)
		}
	}
	sess, err := sessions.Open(ctx, spec, data)
	if errors.Is(err, sessions.ErrLocked) {
		return nil, fmt.Errorf("%w\n(a server holds the store: add --server http://ADDR, e.g. --server 127.0.0.1:8080)", err)
	}
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	if o.Store, err = ledger.StoreFor(sess, 0); err != nil {
		return nil, err
	}
	l, err := ledger.New(o)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.Query(ctx, q)
}

// printUsageReport prints a report as a table, the total last.
func printUsageReport(w io.Writer, rep *ledger.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	cost := "COST"
	if rep.Currency != "" {
		cost += " (" + rep.Currency + ")"
	}
	head := make([]string, 0, len(rep.By)+8)
	for _, b := range rep.By {
		head = append(head, strings.ToUpper(b))
	}
	if len(rep.By) == 0 {
		head = append(head, "")
	}
	head = append(head, "CALLS", "INPUT", "OUTPUT", "CACHED", "REASONING", "TOTAL", cost, "TOOLS", "TOOL TIME")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	row := func(key []string, t ledger.Totals) {
		cells := append(key, strconv.FormatInt(t.Calls, 10), strconv.FormatInt(t.InputTokens, 10), strconv.FormatInt(t.OutputTokens, 10),
			strconv.FormatInt(t.CachedInputTokens, 10), strconv.FormatInt(t.ReasoningTokens, 10), strconv.FormatInt(t.TotalTokens, 10),
			t.Cost.String(), strconv.FormatInt(t.ToolCalls, 10), (time.Duration(t.ToolMs) * time.Millisecond).String())
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	for _, g := range rep.Groups {
		key := make([]string, len(rep.By))
		for i, b := range rep.By {
			key[i] = cmpDash(g.Key[b])
		}
		row(key, g.Totals)
	}
	total := make([]string, max(len(rep.By), 1))
	total[0] = "TOTAL"
	for i := 1; i < len(total); i++ {
		total[i] = ""
	}
	row(total, rep.Total)
	tw.Flush()
	if rep.More > 0 {
		fmt.Fprintf(w, "(%d more groups: raise --limit)\n", rep.More)
	}
	if rep.Total.Unpriced > 0 {
		fmt.Fprintf(w, "(%d calls of models without a price are not in the cost)\n", rep.Total.Unpriced)
	}
}
