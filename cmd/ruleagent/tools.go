package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
	_ "github.com/ruleagent/ruleagent/tools/builtin"
	"github.com/ruleagent/ruleagent/tools/sandbox"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

func runTools(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "call" {
		return runToolsCall(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print tool types and builtins with their schemas as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: ruleagent tools [--json]")
		fmt.Fprintln(stderr, "       ruleagent tools call NAME [--config JSON] --args JSON [--workspace DIR] [--json]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usagef("%v", err)
	}
	type builtin struct {
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		ConfigSchema json.RawMessage `json:"configSchema"`
		ArgsSchema   json.RawMessage `json:"argsSchema"`
		// Sandbox says whether and how the bash tool's commands are
		// confined on this machine.
		Sandbox *sandbox.Status `json:"sandbox,omitempty"`
	}
	var list []builtin
	for _, d := range tools.Builtins.List() {
		b := builtin{Name: d.Name, Description: d.Description, ConfigSchema: d.ConfigSchema, ArgsSchema: d.ArgsSchema}
		if d.Name == "bash" {
			st := sandbox.Describe()
			b.Sandbox = &st
		}
		list = append(list, b)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"types": tools.TypeDocs(), "builtins": list})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL TYPES")
	for _, t := range tools.TypeDocs() {
		fmt.Fprintf(tw, "  %s\t%s\n", t.Type, t.Description)
	}
	fmt.Fprintln(tw, "\nBUILT-IN TOOLS (type builtin)")
	for _, b := range list {
		fmt.Fprintf(tw, "  %s\t%s\n", b.Name, b.Description)
		fmt.Fprintf(tw, "  \tconfig: %s\n", schemaFields(b.ConfigSchema))
		fmt.Fprintf(tw, "  \targs:   %s\n", schemaFields(b.ArgsSchema))
		if b.Sandbox != nil {
			fmt.Fprintf(tw, "  \tsandbox: %s\n", sandbox.Summary())
		}
	}
	fmt.Fprintln(tw, "\nSchemas in full: ruleagent tools --json")
	return tw.Flush()
}

// schemaFields lists a schema's property names, marking the required ones.
func schemaFields(raw json.RawMessage) string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(raw, &s) != nil || len(s.Properties) == 0 {
		return "(none)"
	}
	var names []string
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		for _, r := range s.Required {
			if r == n {
				names[i] = n + "*"
			}
		}
	}
	return strings.Join(names, ", ")
}

func runToolsCall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tools call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "{}", "the tool's config object (JSON)")
	callArgs := fs.String("args", "{}", "the call's arguments (JSON)")
	workspace := fs.String("workspace", ".", "default workspace of file tools and bash")
	maxOut := fs.Int("max-output", agent.DefaultMaxToolOutputLength, "truncate the result to this many characters")
	asJSON := fs.Bool("json", false, "print the outcome and its AG-UI events as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: ruleagent tools call NAME [--config JSON] --args JSON [--workspace DIR] [--json]")
		fmt.Fprintln(stderr, "Exit code: 0 success, 3 refused by policy, 1 any other error.")
		fs.PrintDefaults()
	}
	name, rest := splitPositional(args)
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usagef("%v", err)
	}
	if name == "" {
		return usagef("tools call needs the builtin's NAME")
	}
	spec, err := json.Marshal(map[string]any{"type": "builtin", "name": name, "config": json.RawMessage(*config)})
	if err != nil || !json.Valid([]byte(*config)) {
		return usagef("--config is not valid JSON")
	}
	specs, err := tools.ParseSpecs([]byte("[" + string(spec) + "]"))
	if err != nil {
		return err
	}
	scr := scrub.New()
	set, err := tools.Build(ctx, specs, tools.BuildEnv{WorkDir: *workspace, Secrets: scr})
	if err != nil {
		return err
	}
	defer set.Close()
	var rec events.Recorder
	run := &tools.Run{Sink: &rec, Scrubber: scr, MaxOutput: *maxOut, Aspects: mustManager(),
		Point: aspects.Point{RunID: agent.NewID("cli-")}}
	out := set.Invoke(ctx, run, tools.Call{ID: agent.NewID("call_"), Name: set.Names()[0], Args: json.RawMessage(*callArgs)})
	if *asJSON {
		evs := rec.JSON()
		raw := make([]json.RawMessage, len(evs))
		for i, e := range evs {
			raw[i] = e
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"content": out.Content, "isError": out.IsError, "kind": out.Kind,
			"durationMs": out.Duration.Milliseconds(), "events": raw}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stdout, out.Content)
	}
	switch {
	case !out.IsError:
		return nil
	case refusedByPolicy(out.Kind):
		return &exitError{code: exitRefused, err: errors.New("refused by policy (" + out.Kind + ")")}
	default:
		return &exitError{code: exitFailure, err: errors.New("the call failed (" + nonEmpty(out.Kind, "error result") + ")")}
	}
}

// refusedByPolicy: permission refusals and workspace escapes exit with 3.
func refusedByPolicy(kind string) bool {
	return kind == "permission_denied" || kind == "invalid_path" || kind == "repeated_call"
}

func mustManager() *aspects.Manager {
	m, _ := aspects.NewManager(aspects.Global()...)
	return m
}

func nonEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
