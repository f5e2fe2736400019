package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server"
	"github.com/ruleagent/ruleagent/state/runrecord"
)

const runsUsage = `Usage: ruleagent runs list [--chain ID] [--thread ID] [--user ID] [--limit N] [--json]
       ruleagent runs export RUN_ID > run.json

The runs a server recorded (serve --record-runs): list them, newest first, or
export one: its record and its events, as ruleagent replay reads it.
  --server URL   the server (default http://127.0.0.1:8080; RULEAGENT_SERVER)
  --token T      its bearer token (RULEAGENT_TOKEN)
`

func runRuns(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("runs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, runsUsage) }
	srv := fs.String("server", envOr("RULEAGENT_SERVER", "http://127.0.0.1:8080"), "the server")
	token := fs.String("token", os.Getenv("RULEAGENT_TOKEN"), "the server's bearer token")
	chain := fs.String("chain", "", "list: only this chain's runs")
	thread := fs.String("thread", "", "list: only this thread's runs")
	user := fs.String("user", "", "list: only this user's runs")
	limit := fs.Int("limit", 0, "list: at most this many")
	asJSON := fs.Bool("json", false, "list: print JSON")
	if len(args) == 0 {
		fmt.Fprint(stderr, runsUsage)
		return usagef("runs needs a subcommand: list or export")
	}
	sub := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usagef("%v", err)
	}
	api := serverAPI(*srv, *token)
	switch sub {
	case "list":
		if fs.NArg() > 0 {
			return usagef("runs list takes no arguments, got %q", fs.Args())
		}
		q := url.Values{}
		for k, v := range map[string]string{"chain": *chain, "thread": *thread, "user": *user} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if *limit > 0 {
			q.Set("limit", strconv.Itoa(*limit))
		}
		body, err := getRaw(ctx, api, "/api/v1/records?"+q.Encode())
		if err != nil {
			return err
		}
		var list []runrecord.Meta
		if err := json.Unmarshal(body, &list); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, list)
		}
		printRunList(stdout, list)
		return nil
	case "export":
		if fs.NArg() != 1 {
			return usagef("runs export takes one run id")
		}
		body, err := getRaw(ctx, api, "/api/v1/runs/"+url.PathEscape(fs.Arg(0))+"/record")
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(bytes.TrimSpace(body), '\n'))
		return err
	}
	return usagef("runs %q: want list or export", sub)
}

// getRaw GETs path from the server and returns its body (an error for a
// status other than 200, with the server's message).
func getRaw(ctx context.Context, a apiSource, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return nil, err
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the server at %s: %w", a.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 512<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the server answered %d: %s", resp.StatusCode, apiMessage(b))
	}
	return b, nil
}

func printRunList(w io.Writer, list []runrecord.Meta) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no recorded runs")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tCHAIN\tOUTCOME\tSTEPS\tTOOLS\tTOKENS\tCOST\tSTARTED\tREPLAYABLE")
	for _, m := range list {
		cost := "-"
		if m.Cost != "" {
			cost = m.Cost + " " + m.Currency
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%v\n", m.RunID, m.ChainID, m.Outcome, m.Steps, m.ToolCalls,
			m.InputTokens+m.OutputTokens, cost, m.StartedAt.Local().Format(time.DateTime), m.Replayable)
	}
	tw.Flush()
}

const replayUsage = `Usage: ruleagent replay [--json] [--events] [--rerun-read-only] run.json

Replays a run exported with ruleagent runs export, offline: the recorded
chains run again and every LLM call and tool call is answered from the
record (no model is called, no tool with effects runs). It says whether
the replay emitted the run's events (ids and times aside), or where it
first diverged; the exit code is 1 when it did not reproduce the run.
  --events           print the replay's events (AG-UI JSON lines) first
  --json             print the report as JSON
  --rerun-read-only  run the read-only built-ins (read, grep, glob, skill) again
`

func runReplay(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, replayUsage) }
	asJSON := fs.Bool("json", false, "print the report as JSON")
	showEvents := fs.Bool("events", false, "print the replay's events")
	rerun := fs.Bool("rerun-read-only", false, "run the read-only built-ins again")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usagef("%v", err)
	}
	if fs.NArg() != 1 {
		return usagef("replay takes one file: a run exported with ruleagent runs export")
	}
	raw, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	rec, err := runrecord.Decode(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	if len(rec.Events) == 0 {
		return fmt.Errorf("%s: the export holds no events to compare with (exported with ?events=false?)", fs.Arg(0))
	}
	// The replay's chains are the record's; the folder it is served from
	// holds none.
	dir, err := os.MkdirTemp("", "ruleagent-replay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The replay's own log lines (its run's) would only repeat the report.
	store, errs := server.OpenStoreWith(dir, server.NewConfig(rec.Globals), server.StoreOptions{Logger: slog.New(slog.DiscardHandler)})
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	defer store.Close()
	recorded := make([][]byte, len(rec.Events))
	for i, e := range rec.Events {
		recorded[i] = e
	}
	o := server.ReplayOptions{ReRunReadOnly: *rerun}
	if *showEvents {
		o.Sink = jsonLines(stdout)
	}
	rep, err := store.Replay(ctx, rec, recorded, o)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := printJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		printReplayReport(stdout, rep)
	}
	if !rep.Same {
		return errNotReproduced
	}
	return nil
}

// jsonLines writes events as JSON lines.
func jsonLines(w io.Writer) events.Sink {
	var mu sync.Mutex
	var buf []byte
	return events.SinkFunc(func(ev events.Event) {
		mu.Lock()
		defer mu.Unlock()
		buf = append(ev.AppendJSON(buf[:0]), '\n')
		_, _ = w.Write(buf)
	})
}

// errNotReproduced ends a replay that did not reproduce its run (exit 1;
// the report says why).
var errNotReproduced = errors.New("the replay did not reproduce the run")

func printReplayReport(w io.Writer, rep *server.ReplayReport) {
	if rep.Same {
		fmt.Fprintf(w, "replayed %s: the same %d events (outcome %s), no LLM or tool called\n", rep.Of, rep.Events, rep.Outcome)
		return
	}
	fmt.Fprintf(w, "replayed %s: it differs (outcome %s, %d events, %d recorded)\n", rep.Of, rep.Outcome, rep.Events, rep.RecordedEvents)
	if d := rep.Divergence; d != nil {
		fmt.Fprintf(w, "  diverged at %s: %s", d.What, d.Field)
		if d.Recorded != "" || d.Replayed != "" {
			fmt.Fprintf(w, " (recorded %s, replayed %s)", d.Recorded, d.Replayed)
		}
		fmt.Fprintln(w)
	}
	if d := rep.Difference; d != nil {
		b, _ := json.Marshal(d)
		fmt.Fprintf(w, "  first different event: %s\n", b)
	}
}
