package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/server"
)

func runValidate(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("validate", flag.ContinueOnError)
	fset.SetOutput(stderr)
	chains := fset.String("chains", "", "folder of other chains the files may call (default: each file's own folder)")
	asJSON := fset.Bool("json", false, "print the problems as JSON")
	policyF := fset.String("policy", os.Getenv("RULEAGENT_POLICY"), "the policy serve runs with (JSON or a file): checked, and its \"sandbox\" floor applied (RULEAGENT_POLICY)")
	var globalsF globalFlag
	fset.Var(&globalsF, "global", "set ${global.k} (k=v, repeatable), as for serve and run")
	var epTypes, epBind listFlag
	fset.Var(&epTypes, "endpoint-types", "endpoint types chains may start, as for serve (comma-separated or repeated; * for all); default http, ws, net, schedule")
	fset.Var(&epBind, "endpoint-bind", "hosts listening endpoints may bind besides loopback, as for serve (comma-separated or repeated; * for any)")
	sb := addSandboxFlags(fset)
	fset.Usage = func() {
		fmt.Fprintln(stderr, "Usage: ruleagent validate [--chains DIR] [--json] [--global k=v] [--sandbox M] [--allow-sandbox-off] [--policy P] [--endpoint-types T] [--endpoint-bind H] FILE|DIR...")
		fmt.Fprintln(stderr, "Checks chain files as serve and run load them; a folder is checked whole. Each error or warning names its file and JSON path.")
		fmt.Fprintln(stderr, "Warnings are what RuleGo accepts (a key it ignores, a node without an id, a call to a chain not deployed): exit code 1 only for errors.")
		fset.PrintDefaults()
	}
	var paths []string
	rest := args
	for len(rest) > 0 {
		if err := fset.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return usagef("%v", err)
		}
		rest = fset.Args()
		if len(rest) > 0 {
			paths, rest = append(paths, rest[0]), rest[1:]
		}
	}
	if len(paths) == 0 {
		return usagef("validate needs at least one chain FILE or folder")
	}
	pf, err := server.LoadPolicyFile(*policyF)
	if err != nil {
		return usagef("--policy: %v", err)
	}
	floor, err := sb.floor(pf.Sandbox)
	if err != nil {
		return err
	}
	given, context, err := validationInput(paths, *chains)
	if err != nil {
		return err
	}
	opts := components.Options{Globals: processGlobals(globalsF), Sandbox: floor}
	problems := components.Validate(given, context, opts)
	// The endpoints a server with the same policy would refuse.
	ep, cfg := server.EndpointPolicy{Types: epTypes, Bind: epBind}, server.NewConfig(opts.Globals)
	for _, f := range given {
		for _, p := range ep.Check(cfg, f.DSL) {
			problems = append(problems, components.Problem{File: f.Path, Path: p.Path, Msg: p.Message})
		}
	}
	errs, warnings := components.Split(problems)
	if *asJSON {
		if err := printProblemsJSON(stdout, errs, warnings); err != nil {
			return err
		}
	} else {
		for _, p := range errs {
			fmt.Fprintln(stdout, "error: "+p.Error())
		}
		for _, p := range warnings {
			fmt.Fprintln(stdout, "warning: "+p.Error())
		}
	}
	if len(errs) > 0 {
		return &exitError{code: exitFailure, err: fmt.Errorf("%s and %s in %s", count(strconv.Itoa(len(errs)), "error"), count(strconv.Itoa(len(warnings)), "warning"), count(strconv.Itoa(len(given)), "chain file"))}
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "ok: %s, %s\n", count(strconv.Itoa(len(given)), "chain file"), count(strconv.Itoa(len(warnings)), "warning"))
	}
	return nil
}

// validationInput reads the chains to check (each file given, every chain
// file of each folder given) and the chains they may call: those of
// --chains, else those of each file's folder, as ruleagent run finds them.
func validationInput(paths []string, chains string) (given, context []components.ChainFile, err error) {
	checked := map[string]bool{}
	folders := map[string]bool{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		files := []string{p}
		if fi.IsDir() {
			if files, err = server.ChainFiles(p); err != nil {
				return nil, nil, err
			}
			if len(files) == 0 {
				return nil, nil, usagef("%s holds no chain files (*.json)", p)
			}
		} else {
			folders[filepath.Dir(p)] = true
		}
		for _, f := range files {
			if checked[filepath.Clean(f)] {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, nil, err
			}
			checked[filepath.Clean(f)] = true
			given = append(given, components.ChainFile{Path: f, DSL: b})
		}
	}
	if chains != "" {
		folders = map[string]bool{chains: true}
	}
	for _, dir := range slices.Sorted(maps.Keys(folders)) {
		files, err := server.ChainFiles(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("--chains: %w", err)
		}
		for _, f := range files {
			if checked[filepath.Clean(f)] {
				continue
			}
			if b, err := os.ReadFile(f); err == nil {
				checked[filepath.Clean(f)] = true
				context = append(context, components.ChainFile{Path: f, DSL: b})
			}
		}
	}
	return given, context, nil
}

func printProblemsJSON(w io.Writer, errs, warnings []components.Problem) error {
	if errs == nil {
		errs = []components.Problem{}
	}
	if warnings == nil {
		warnings = []components.Problem{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"errors": errs, "warnings": warnings})
}
