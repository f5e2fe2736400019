package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server"
	"github.com/ruleagent/ruleagent/sessions"
)

const sessionsUsage = `Usage: ruleagent sessions COMMAND [flags]

Commands:
  list [--agent A] [--user U] [--thread T] [--limit N] [--json]
  show ID [--json]                 the session's messages
  export ID [--out FILE]           the session as JSON (stdout without --out)
  delete ID
  model ID NAME                    run the session on an allowedModels entry ("default": the agent's own)

Where the sessions are:
  --server URL [--token T]         a running server's API (RULEAGENT_TOKEN)
  --data DIR --session-store SPEC  the store itself (default: bolt under ./data), when no server holds it
  --chains DIR                     chain files that check model names (store mode; default ./chains)
`

func runSessions(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, sessionsUsage)
		if len(args) == 0 {
			return usagef("sessions needs a command: list, show, export, delete or model")
		}
		return nil
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("sessions "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, sessionsUsage) }
	srv := fs.String("server", "", "a running server, e.g. http://127.0.0.1:8080")
	token := fs.String("token", os.Getenv("RULEAGENT_TOKEN"), "the server's bearer token")
	data := fs.String("data", "data", "the data folder of the bolt store")
	spec := fs.String("session-store", "bolt", "bolt, bolt:PATH or redis://host:port/db")
	chains := fs.String("chains", "chains", "chain files that check model names (store mode)")
	asJSON := fs.Bool("json", false, "print JSON")
	var f sessions.Filter
	fs.StringVar(&f.Agent, "agent", "", "only this agent's sessions")
	fs.StringVar(&f.UserID, "user", "", "only this user's sessions")
	fs.StringVar(&f.ThreadID, "thread", "", "only this thread's sessions")
	fs.IntVar(&f.Limit, "limit", 0, "at most this many, most recent first")
	out := fs.String("out", "", "export: write to this file")
	pos, rest := positionals(args)
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usagef("%v", err)
	}
	pos = append(pos, fs.Args()...)
	want := map[string]int{"list": 0, "show": 1, "export": 1, "delete": 1, "model": 2}
	n, ok := want[cmd]
	if !ok {
		return usagef("sessions: unknown command %q (list, show, export, delete, model)", cmd)
	}
	if len(pos) != n {
		return usagef("sessions %s takes %d argument(s), got %d", cmd, n, len(pos))
	}
	src, err := openSessionSource(ctx, *srv, *token, *spec, *data, *chains)
	if err != nil {
		return err
	}
	defer src.close()
	switch cmd {
	case "list":
		list, err := src.list(ctx, f)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, list)
		}
		printSessionList(stdout, list)
	case "show", "export":
		rec, err := src.get(ctx, pos[0])
		if err != nil {
			return err
		}
		if cmd == "show" && !*asJSON {
			printSession(stdout, rec)
			return nil
		}
		var v any = rec
		if cmd == "export" {
			v = map[string]any{"format": server.SessionExportFormat, "exportedAt": time.Now().UTC(), "session": rec}
		}
		if *out == "" {
			return printJSON(stdout, v)
		}
		b, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "exported %s to %s (%d messages)\n", rec.ID, *out, len(rec.Messages))
	case "delete":
		if err := src.remove(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted %s\n", pos[0])
	case "model":
		info, err := src.setModel(ctx, pos[0], pos[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s now runs on %s\n", info.ID, orDefault(info.Model))
	}
	return nil
}

// positionals takes the arguments before the first flag, so that IDs may
// come first.
func positionals(args []string) ([]string, []string) {
	i := 0
	for i < len(args) && !strings.HasPrefix(args[i], "-") {
		i++
	}
	return args[:i], args[i:]
}

func orDefault(model string) string {
	if model == "" {
		return "the agent's own model"
	}
	return model
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printSessionList(w io.Writer, list []sessions.Info) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no sessions")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMESSAGES\tTURNS\tMODEL\tUPDATED\tEXPIRES")
	for _, i := range list {
		exp := "never"
		if !i.Expires.IsZero() {
			exp = i.Expires.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", i.ID, i.Messages, i.Turns, cmpDash(i.Model), i.Updated.Local().Format(time.DateTime), exp)
	}
	tw.Flush()
}

func cmpDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printSession shows a session as a conversation.
func printSession(w io.Writer, r *sessions.Record) {
	fmt.Fprintf(w, "session %s (agent %s, scope %s", r.ID, r.Agent, r.Scope)
	if r.UserID != "" {
		fmt.Fprintf(w, ", user %s", r.UserID)
	}
	if r.ThreadID != "" {
		fmt.Fprintf(w, ", thread %s", r.ThreadID)
	}
	fmt.Fprintf(w, "): %d turns, model %s, updated %s\n", r.Turns, orDefault(r.Model), r.Updated.Local().Format(time.DateTime))
	for _, c := range r.Compactions {
		fmt.Fprintf(w, "  compacted %d messages (%d turns) at %s\n", c.Messages, c.Turns, c.At.Local().Format(time.DateTime))
	}
	if r.Summary != "" {
		fmt.Fprintf(w, "\nsummary: %s\n", r.Summary)
	}
	fmt.Fprintln(w)
	for _, m := range r.Messages {
		switch m.Role {
		case events.RoleAssistant:
			if m.Content != "" {
				fmt.Fprintf(w, "assistant: %s\n", m.Content)
			}
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(w, "assistant → %s %s\n", tc.Name, tc.Arguments)
			}
		case events.RoleTool:
			mark := "✓"
			if m.Error != "" {
				mark = "✗ " + m.Error
			}
			fmt.Fprintf(w, "tool %s %s: %s\n", m.ToolCallID, mark, m.Content)
		default:
			fmt.Fprintf(w, "%s: %s\n", m.Role, m.Content)
		}
	}
}
