// Package grep is the built-in `grep` tool: it searches file contents in a
// workspace with an RE2 regular expression, the way ripgrep does by default.
// It skips binary files, denied paths, .git and whatever .gitignore files
// ignore, and returns results in a deterministic order (path, then line).
package grep

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

// Name is the builtin name.
const Name = "grep"

// Config configures a grep tool.
type Config struct {
	filetool.WorkspaceConfig
	MaxResults  int   `json:"maxResults" jsonschema:"Most results one call returns: matching lines in content mode, files in the other modes. The model may ask for fewer."`
	MaxFileSize int64 `json:"maxFileSize" jsonschema:"Files larger than this many bytes are skipped (and counted in the result)."`
}

// Defaults are the values of every field a config leaves out.
var Defaults = Config{MaxResults: 100, MaxFileSize: 10 * filetool.MiB}

// Output modes.
const (
	modeContent = "content"
	modeFiles   = "files_with_matches"
	modeCount   = "count"
)

// Limits on arguments.
const (
	maxPatternLen = 1000
	maxContext    = 20
	// maxLineBytes is how much of a line the result shows.
	maxLineBytes = 500
)

// Args are the call arguments.
type Args struct {
	Pattern    string `json:"pattern" jsonschema:"What to look for: a Go (RE2) regular expression, or fixed text when literal is true. Matched against one line at a time."`
	Literal    bool   `json:"literal,omitempty" jsonschema:"Treat pattern as fixed text, not a regular expression."`
	Path       string `json:"path,omitempty" jsonschema:"File or directory to search, relative to the workspace. Defaults to the whole workspace."`
	Include    string `json:"include,omitempty" jsonschema:"Only search files matching this glob. Without a slash it matches file names anywhere (*.go, *.{ts,tsx}); with one it matches paths below path, and ** spans directories (src/**/*_test.go)."`
	Exclude    string `json:"exclude,omitempty" jsonschema:"Skip files and directories matching this glob (same form as include), for example vendor or *_test.go."`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema:"Match without regard to letter case."`
	Context    int    `json:"context,omitempty" jsonschema:"content mode: lines to show before and after each match (at most 20)."`
	OutputMode string `json:"output_mode,omitempty" jsonschema:"content (default): matching lines as path:line: text; files_with_matches: the paths of matching files; count: path:number of matching lines."`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"Return at most this many results (lines in content mode, files otherwise); cannot exceed the configured limit."`
}

const description = "Search file contents in the workspace with a regular expression (RE2) or fixed text. " +
	"Returns matching lines as path:line: text, or with output_mode the matching files or per-file counts. " +
	"Skips binary files and files ignored by .gitignore; narrow the search with path, include and exclude globs."

var argsSchema = tools.ArgsSchema[Args](map[string][]string{"output_mode": {modeContent, modeFiles, modeCount}})

func init() {
	tools.MustRegister(tools.Definition{
		Name:         Name,
		Description:  "Search file contents with a regular expression, honouring .gitignore (workspace-confined).",
		ConfigSchema: tools.SchemaFor(Defaults),
		ArgsSchema:   argsSchema,
		New:          New,
	})
}

// Tool is a grep tool bound to one workspace.
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
	if err := filetool.CheckRange("maxResults", int64(cfg.MaxResults), 1, 10_000); err != nil {
		return nil, err
	}
	if err := filetool.CheckRange("maxFileSize", cfg.MaxFileSize, 1, 1<<30); err != nil {
		return nil, err
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
	s, err := t.newSearch(a)
	if err != nil {
		return tools.Result{}, err
	}
	rel, fi, err := t.ws.Stat(a.Path)
	if err != nil {
		return tools.Result{}, err
	}
	if err := s.run(ctx, rel, fi); err != nil {
		return tools.Result{}, err
	}
	return tools.TextResult(s.report(a.Pattern, rel, fi.IsDir())), nil
}

// newSearch validates the arguments and compiles the pattern.
func (t *Tool) newSearch(a Args) (*search, error) {
	if a.Pattern == "" {
		return nil, tools.Errorf(tools.ErrInvalidArgs, "pattern is required")
	}
	if len(a.Pattern) > maxPatternLen {
		return nil, tools.Errorf(tools.ErrInvalidArgs, "pattern is %d characters long; the limit is %d", len(a.Pattern), maxPatternLen)
	}
	mode := a.OutputMode
	switch mode {
	case "":
		mode = modeContent
	case modeContent, modeFiles, modeCount:
	default:
		return nil, tools.Errorf(tools.ErrInvalidArgs, "unknown output_mode %q; use %s, %s or %s", mode, modeContent, modeFiles, modeCount)
	}
	if a.Context < 0 || a.Context > maxContext {
		return nil, tools.Errorf(tools.ErrInvalidArgs, "context must be between 0 and %d, got %d", maxContext, a.Context)
	}
	if a.Context > 0 && mode != modeContent {
		return nil, tools.Errorf(tools.ErrInvalidArgs, "context applies to output_mode content only")
	}
	for name, g := range map[string]string{"include": a.Include, "exclude": a.Exclude} {
		if g != "" && !doublestar.ValidatePattern(g) {
			return nil, tools.Errorf(tools.ErrInvalidArgs, "%s %q is not a valid glob", name, g)
		}
	}
	limit, capped := a.MaxResults, false
	switch {
	case limit < 0:
		return nil, tools.Errorf(tools.ErrInvalidArgs, "max_results must be positive, got %d", limit)
	case limit == 0:
		limit = t.cfg.MaxResults
	case limit > t.cfg.MaxResults:
		limit, capped = t.cfg.MaxResults, true
	}
	expr := a.Pattern
	if a.Literal {
		expr = regexp.QuoteMeta(expr)
	}
	if a.IgnoreCase {
		expr = "(?i)" + expr
	}
	line, err := regexp.Compile(expr)
	if err != nil {
		return nil, tools.Wrap(tools.ErrInvalidArgs, err, "pattern is not a valid Go (RE2) regular expression; set literal to search for fixed text")
	}
	s := &search{
		ws: t.ws, mode: mode, context: a.Context, limit: limit, capped: capped,
		maxSize: t.cfg.MaxFileSize, include: a.Include, exclude: a.Exclude,
		lines: newScanner(line, chunkRegexp(expr)),
	}
	return s, nil
}

// chunkRegexp compiles the pattern for whole buffers of lines, which lets
// the scanner skip lines that cannot match without running the line
// expression on each. It is nil when a multi-line search could miss a
// match that a line-by-line search would find: \A and \z mean the start and
// end of a line only when the line is searched alone.
func chunkRegexp(expr string) *regexp.Regexp {
	if strings.Contains(expr, `\A`) || strings.Contains(expr, `\z`) {
		return nil
	}
	re, err := regexp.Compile("(?m)" + expr)
	if err != nil {
		return nil
	}
	return re
}
