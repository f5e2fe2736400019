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
		fmt.Fprintln(stderr, "Checks chain files statically; each problem names its file and JSON path. Exit code 1 when any is found.")
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
	problems := components.Validate(given, context, nil)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if problems == nil {
			problems = []components.Problem{}
		}
		if err := enc.Encode(problems); err != nil {
			return err
		}
	} else {
		for _, p := range problems {
			fmt.Fprintln(stdout, p.Error())
		}
	}
	if len(problems) > 0 {
		return &exitError{code: exitFailure, err: fmt.Errorf("%d problem(s) in %d file(s)", len(problems), len(files))}
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "ok: %d chain file(s)\n", len(files))
	}
	return nil
}
