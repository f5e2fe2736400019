package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ruleagent/ruleagent/components"
)

func runValidate(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("validate", flag.ContinueOnError)
	fset.SetOutput(stderr)
	chains := fset.String("chains", "", "folder of other chains the files may call (their targetIds count as known)")
	asJSON := fset.Bool("json", false, "print the problems as JSON")
	fset.Usage = func() {
		fmt.Fprintln(stderr, "Usage: ruleagent validate [--chains DIR] [--json] FILE...")
		fmt.Fprintln(stderr, "Checks chain files statically; each error or warning names its file and JSON path.")
		fmt.Fprintln(stderr, "Warnings are what RuleGo accepts (a node without an id, a call to a chain not deployed): exit code 1 only for errors.")
		fset.PrintDefaults()
	}
	var files []string
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
			files, rest = append(files, rest[0]), rest[1:]
		}
	}
	if len(files) == 0 {
		return usagef("validate needs at least one chain FILE")
	}
	var given []components.ChainFile
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		given = append(given, components.ChainFile{Path: f, DSL: b})
	}
	var context []components.ChainFile
	if *chains != "" {
		err := filepath.WalkDir(*chains, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
				return err
			}
			b, err := os.ReadFile(p)
			if err == nil {
				context = append(context, components.ChainFile{Path: p, DSL: b})
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("--chains: %w", err)
		}
	}
	errs, warnings := components.Split(components.Validate(given, context, components.Options{}))
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if errs == nil {
			errs = []components.Problem{}
		}
		if warnings == nil {
			warnings = []components.Problem{}
		}
		if err := enc.Encode(map[string]any{"errors": errs, "warnings": warnings}); err != nil {
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
		return &exitError{code: exitFailure, err: fmt.Errorf("%s and %s in %s", count(strconv.Itoa(len(errs)), "error"), count(strconv.Itoa(len(warnings)), "warning"), count(strconv.Itoa(len(files)), "file"))}
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "ok: %s, %s\n", count(strconv.Itoa(len(files)), "chain file"), count(strconv.Itoa(len(warnings)), "warning"))
	}
	return nil
}
