// Package read is the built-in `read` tool: it reads text files with line
// numbers, searches file contents, and lists directories, all confined to a
// workspace (see tools/workspace).
package read

import (
	"context"
	"encoding/json"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

// Name is the builtin name.
const Name = "read"

// Config configures a read tool.
type Config struct {
	filetool.WorkspaceConfig
	MaxReadLines     int   `json:"maxReadLines" jsonschema:"Most lines one file read returns; a header says which lines were shown out of how many and where to continue."`
	MaxSearchResults int   `json:"maxSearchResults" jsonschema:"Most matching lines one search returns."`
	MaxFileSize      int64 `json:"maxFileSize" jsonschema:"Largest file, in bytes, that is read whole or searched. Larger files can still be read by line range."`
	MaxListEntries   int   `json:"maxListEntries" jsonschema:"Most entries one directory listing returns."`
}

// Defaults are the values of every field a config leaves out.
var Defaults = Config{
	MaxReadLines:     1000,
	MaxSearchResults: 30,
	MaxFileSize:      10 * filetool.MiB,
	MaxListEntries:   1000,
}

// Limits on arguments, so that one call stays cheap whatever the model asks.
const (
	maxRegexLen     = 1000
	defaultMaxDepth = 3
	maxMaxDepth     = 20
)

// Operations.
const (
	opFile   = "file"
	opSearch = "search"
	opList   = "list"
)

// Args are the call arguments.
type Args struct {
	Operation  string `json:"operation,omitempty" jsonschema:"file: read a file with line numbers; search: find lines containing query; list: list a directory. When omitted: search if query is given, list if path is a directory, file otherwise."`
	Path       string `json:"path,omitempty" jsonschema:"File or directory, relative to the workspace. For search and list it defaults to the whole workspace."`
	LineFrom   int    `json:"line_from,omitempty" jsonschema:"file: first line to show, counting from 1."`
	LineTo     int    `json:"line_to,omitempty" jsonschema:"file: last line to show, inclusive."`
	Query      string `json:"query,omitempty" jsonschema:"search: the text to look for (a regular expression if use_regex is true)."`
	UseRegex   bool   `json:"use_regex,omitempty" jsonschema:"search: treat query as a Go (RE2) regular expression."`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema:"search: match without regard to letter case."`
	Pattern    string `json:"pattern,omitempty" jsonschema:"search: only search files matching this glob. Without a slash it matches file names anywhere (*.go); with one it matches paths below path, and ** spans directories (src/**/*_test.go)."`
	Recursive  bool   `json:"recursive,omitempty" jsonschema:"list: list sub-directories too, down to max_depth."`
	MaxDepth   int    `json:"max_depth,omitempty" jsonschema:"list: how many directory levels to show (default 3 when recursive, at most 20). Setting it implies recursive."`
}

const description = "Read text files, search their contents, and list directories in the workspace. " +
	"operation \"file\" shows a file with line numbers (use line_from/line_to for part of a long file); " +
	"\"search\" returns matching lines as path:line: text (query, optional use_regex, ignore_case, and a glob pattern such as *.go or src/**/*.ts); " +
	"\"list\" lists a directory with sizes, directories ending in /. Binary files are refused."

func init() {
	tools.MustRegister(tools.Definition{
		Name:         Name,
		Description:  "Read files with line numbers, search file contents, list directories (workspace-confined).",
		ConfigSchema: tools.SchemaFor(Defaults),
		ArgsSchema:   argsSchema,
		New:          New,
	})
}

var argsSchema = tools.ArgsSchema[Args](map[string][]string{"operation": {opFile, opSearch, opList}})

// Tool is a read tool bound to one workspace.
type Tool struct {
	cfg Config
	ws  *workspace.Workspace
}

// New is the factory: it decodes and validates config and opens the
// workspace.
func New(bc tools.BuildContext, config json.RawMessage) (tools.Tool, error) {
	cfg := Defaults
	if err := tools.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		field     string
		v, lo, hi int64
	}{
		{"maxReadLines", int64(cfg.MaxReadLines), 1, 100_000},
		{"maxSearchResults", int64(cfg.MaxSearchResults), 1, 10_000},
		{"maxFileSize", cfg.MaxFileSize, 1, 1 << 30},
		{"maxListEntries", int64(cfg.MaxListEntries), 1, 100_000},
	} {
		if err := filetool.CheckRange(c.field, c.v, c.lo, c.hi); err != nil {
			return nil, err
		}
	}
	ws, err := cfg.Open(bc)
	if err != nil {
		return nil, err
	}
	return &Tool{cfg: cfg, ws: ws}, nil
}

// Info implements tools.Tool.
func (t *Tool) Info() tools.Info {
	return tools.Info{Name: Name, Description: description, Parameters: argsSchema}
}

// Close releases the workspace.
func (t *Tool) Close() error { return t.ws.Close() }

// Call implements tools.Tool.
func (t *Tool) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var a Args
	if err := tools.DecodeArgs(raw, &a); err != nil {
		return tools.Result{}, err
	}
	op, err := t.operation(a)
	if err != nil {
		return tools.Result{}, err
	}
	var text string
	switch op {
	case opFile:
		text, err = t.readFile(ctx, a)
	case opSearch:
		text, err = t.search(ctx, a)
	case opList:
		text, err = t.list(ctx, a)
	}
	if err != nil {
		return tools.Result{}, err
	}
	return tools.TextResult(text), nil
}

// operation returns the operation asked for, or infers it as the seed's
// read tool does: a query means search, a directory means list.
func (t *Tool) operation(a Args) (string, error) {
	switch a.Operation {
	case opFile, opSearch, opList:
		return a.Operation, nil
	case "":
	default:
		return "", tools.Errorf(tools.ErrInvalidArgs, "unknown operation %q; use file, search or list", a.Operation)
	}
	if a.Query != "" {
		return opSearch, nil
	}
	_, fi, err := t.ws.Stat(a.Path)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return opList, nil
	}
	return opFile, nil
}
