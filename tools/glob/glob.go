// Package glob is the built-in `glob` tool: it finds files in a workspace by
// name pattern (doublestar syntax, such as **/*.go), leaving out denied
// paths, .git and whatever .gitignore files ignore.
package glob

import (
	"context"
	"encoding/json"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

// Name is the builtin name.
const Name = "glob"

// Config configures a glob tool.
type Config struct {
	filetool.WorkspaceConfig
	MaxResults int `json:"maxResults" jsonschema:"Most paths one call returns. The model may ask for fewer."`
}

// Defaults are the values of every field a config leaves out.
var Defaults = Config{MaxResults: 200}

// Sort orders.
const (
	sortPath  = "path"
	sortMtime = "mtime"
)

// maxSorted bounds how many matches are collected to sort by modification
// time, so that a pattern matching a huge tree cannot exhaust memory.
const maxSorted = 100_000

// Args are the call arguments.
type Args struct {
	Pattern    string `json:"pattern" jsonschema:"Glob matched against file paths below path: * and ? within one directory, ** across directories, {a,b} alternatives, [a-z] classes. For example **/*.go, src/**/*_test.go, *.{yml,yaml}."`
	Path       string `json:"path,omitempty" jsonschema:"Directory to search, relative to the workspace. Defaults to the whole workspace."`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"Return at most this many paths; cannot exceed the configured limit."`
	Sort       string `json:"sort,omitempty" jsonschema:"path (default): in path order, directory by directory; mtime: most recently modified first."`
}

const description = "Find files in the workspace by glob pattern, such as **/*.go or src/**/*.{ts,tsx}. " +
	"Returns workspace-relative file paths, in path order or newest first with sort mtime. " +
	"Files ignored by .gitignore are left out."

var argsSchema = tools.ArgsSchema[Args](map[string][]string{"sort": {sortPath, sortMtime}})

func init() {
	tools.MustRegister(tools.Definition{
		Name:         Name,
		Description:  "Find files by glob pattern (**/*.go), honouring .gitignore (workspace-confined).",
		ConfigSchema: tools.SchemaFor(Defaults),
		ArgsSchema:   argsSchema,
		New:          New,
	})
}

// Tool is a glob tool bound to one workspace.
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
	if err := filetool.CheckRange("maxResults", int64(cfg.MaxResults), 1, 100_000); err != nil {
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
	pattern, err := cleanPattern(a.Pattern)
	if err != nil {
		return tools.Result{}, err
	}
	order := a.Sort
	switch order {
	case "":
		order = sortPath
	case sortPath, sortMtime:
	default:
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "unknown sort %q; use %s or %s", order, sortPath, sortMtime)
	}
	limit, capped := a.MaxResults, false
	switch {
	case limit < 0:
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "max_results must be positive, got %d", limit)
	case limit == 0:
		limit = t.cfg.MaxResults
	case limit > t.cfg.MaxResults:
		limit, capped = t.cfg.MaxResults, true
	}
	rel, fi, err := t.ws.Stat(a.Path)
	if err != nil {
		return tools.Result{}, err
	}
	if !fi.IsDir() {
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "path %s is a file; give the directory to search and put the name in pattern", rel)
	}
	g := &globber{ws: t.ws, root: rel, pattern: pattern, segments: pruneSegments(pattern), limit: limit, capped: capped, byMtime: order == sortMtime}
	if err := g.run(ctx); err != nil {
		return tools.Result{}, err
	}
	return tools.TextResult(g.report(a.Pattern)), nil
}

// cleanPattern validates the pattern. It is relative to the searched
// directory, so absolute patterns and ".." are refused rather than
// silently matching nothing.
func cleanPattern(p string) (string, error) {
	p = strings.TrimPrefix(strings.TrimSpace(p), "./")
	switch {
	case p == "":
		return "", tools.Errorf(tools.ErrInvalidArgs, "pattern is required")
	case len(p) > 1000:
		return "", tools.Errorf(tools.ErrInvalidArgs, "pattern is %d characters long; the limit is 1000", len(p))
	case strings.HasPrefix(p, "/"):
		return "", tools.Errorf(tools.ErrInvalidArgs, "pattern %q is absolute; patterns are relative to path (set path to the directory and pattern to, e.g., **/*.go)", p)
	case !doublestar.ValidatePattern(p):
		return "", tools.Errorf(tools.ErrInvalidArgs, "pattern %q is not a valid glob", p)
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." {
			return "", tools.Errorf(tools.ErrInvalidArgs, "pattern %q climbs out with ..; set path to the directory to search instead", p)
		}
	}
	return path.Clean(p), nil
}

// pruneSegments splits the pattern into path components for pruning
// directories that cannot hold a match. It returns nil, which disables
// pruning, when an alternative spans directories ({a/b,c}): then the
// components are not known in advance.
func pruneSegments(p string) []string {
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case '/':
			if depth > 0 {
				return nil
			}
		}
	}
	return strings.Split(p, "/")
}
