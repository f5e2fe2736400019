// Package edit is the built-in `edit` tool: it changes parts of existing
// text files in a workspace (see tools/workspace) by line, by search and
// replace, by insertion and by deletion, and it backs up every version it
// replaces, per session, so that a session can list and restore its own
// backups and nobody else's.
package edit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

// Name is the builtin name.
const Name = "edit"

// Config configures an edit tool.
type Config struct {
	filetool.WorkspaceConfig
	MaxFileSize int64 `json:"maxFileSize" jsonschema:"Largest file, in bytes, that can be edited, before or after the edit."`
	MaxHistory  int   `json:"maxHistory" jsonschema:"How many backup versions of each file are kept per session; older ones are deleted."`
}

// Defaults are the values of every field a config leaves out.
var Defaults = Config{
	MaxFileSize: 10 * filetool.MiB,
	MaxHistory:  10,
}

// maxRegexLen bounds regular expressions. RE2 cannot backtrack, so this is
// about the size of the compiled program, not about ReDoS.
const maxRegexLen = 1000

// Operations.
const (
	opLine        = "line"
	opSearch      = "search"
	opInsert      = "insert"
	opDelete      = "delete"
	opRestore     = "restore"
	opListBackups = "list_backups"
)

// Args are the call arguments.
type Args struct {
	Operation  string  `json:"operation" jsonschema:"line: replace lines line_from..line_to with content; search: replace the text search with replace; insert: insert content before or after an anchor; delete: delete lines line_from..line_to; restore: bring back a backup version; list_backups: list this session's backups."`
	Path       string  `json:"path,omitempty" jsonschema:"File to edit, relative to the workspace. Optional for list_backups (all files)."`
	LineFrom   int     `json:"line_from,omitempty" jsonschema:"line, delete: first line, counting from 1."`
	LineTo     int     `json:"line_to,omitempty" jsonschema:"line, delete: last line, inclusive (default line_from)."`
	Content    *string `json:"content,omitempty" jsonschema:"line, insert: the new text; it may span several lines. A single trailing newline is ignored."`
	Search     string  `json:"search,omitempty" jsonschema:"search: the exact text to find (a regular expression if use_regex). It must occur once unless global is true."`
	Replace    *string `json:"replace,omitempty" jsonschema:"search: the replacement (\"\" deletes the match). With use_regex, $1 or ${name} insert groups."`
	UseRegex   bool    `json:"use_regex,omitempty" jsonschema:"search, insert: treat search, before and after as Go (RE2) regular expressions (at most 1000 characters); ^ and $ match at line starts and ends."`
	Global     bool    `json:"global,omitempty" jsonschema:"search: replace every occurrence instead of requiring exactly one."`
	Before     string  `json:"before,omitempty" jsonschema:"insert: insert the content as new lines before the line holding this text, which must occur once."`
	After      string  `json:"after,omitempty" jsonschema:"insert: insert the content as new lines after the line holding this text, which must occur once."`
	BeforeLine *int    `json:"before_line,omitempty" jsonschema:"insert: insert before this line number."`
	AfterLine  *int    `json:"after_line,omitempty" jsonschema:"insert: insert after this line number (0 inserts at the top)."`
	Version    int     `json:"version,omitempty" jsonschema:"restore: the backup version to restore (default the latest)."`
}

const description = "Change part of an existing text file in the workspace. Operations: " +
	"\"line\" replaces lines line_from..line_to with content; " +
	"\"search\" replaces the text search with replace (it must occur exactly once unless global; use_regex for a regular expression); " +
	"\"insert\" adds content as new lines before/after a unique text (before, after) or a line number (before_line, after_line); " +
	"\"delete\" removes lines line_from..line_to; " +
	"\"restore\" undoes edits by restoring a backup (default the latest); \"list_backups\" lists them. " +
	"Every change backs up the previous content first. Line endings are preserved. Read the file first so your search text matches exactly."

func init() {
	tools.MustRegister(tools.Definition{
		Name:         Name,
		Description:  "Edit files by line, search/replace, insert, delete; per-session backups and restore (workspace-confined).",
		ConfigSchema: tools.SchemaFor(Defaults),
		ArgsSchema:   argsSchema,
		New:          New,
	})
}

var argsSchema = tools.ArgsSchema[Args](map[string][]string{
	"operation": {opLine, opSearch, opInsert, opDelete, opRestore, opListBackups},
})

// Tool is an edit tool bound to one workspace.
type Tool struct {
	cfg     Config
	ws      *workspace.Workspace
	backups *backupStore
	locks   filetool.PathLocks
	// instanceKey keeps the backups of calls that carry no session apart
	// from every session's, and from other tool instances'.
	instanceKey string
}

// New is the factory: it decodes and validates config and opens the
// workspace. The backup directory is created on the first edit.
func New(bc tools.BuildContext, config json.RawMessage) (tools.Tool, error) {
	cfg := Defaults
	if err := tools.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	if err := filetool.CheckRange("maxFileSize", cfg.MaxFileSize, 1, 1<<30); err != nil {
		return nil, err
	}
	if err := filetool.CheckRange("maxHistory", int64(cfg.MaxHistory), 1, 1000); err != nil {
		return nil, err
	}
	ws, err := cfg.Open(bc)
	if err != nil {
		return nil, err
	}
	var id [12]byte
	_, _ = rand.Read(id[:])
	return &Tool{
		cfg:         cfg,
		ws:          ws,
		backups:     &backupStore{ws: ws, maxHistory: cfg.MaxHistory, maxFileSize: cfg.MaxFileSize},
		instanceKey: "instance-" + hex.EncodeToString(id[:]),
	}, nil
}

// Info implements tools.Tool.
func (t *Tool) Info() tools.Info {
	return tools.Info{Name: Name, Description: description, Parameters: argsSchema}
}

// Close releases the workspace and the backup store.
func (t *Tool) Close() error {
	berr := t.backups.Close()
	if err := t.ws.Close(); err != nil {
		return err
	}
	return berr
}

// session is the key the call's backups are kept under.
func (t *Tool) session(ctx context.Context) string {
	if k := tools.CallFrom(ctx).SessionKey(); k != "" {
		return k
	}
	return t.instanceKey
}

// Call implements tools.Tool.
func (t *Tool) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var a Args
	if err := tools.DecodeArgs(raw, &a); err != nil {
		return tools.Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return tools.Result{}, filetool.CtxError(err, "edit")
	}
	switch a.Operation {
	case opLine, opSearch, opInsert, opDelete, opRestore, opListBackups:
	case "":
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "operation is required: line, search, insert, delete, restore or list_backups")
	default:
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "unknown operation %q; use line, search, insert, delete, restore or list_backups", a.Operation)
	}
	if a.Operation != opListBackups && strings.TrimSpace(a.Path) == "" {
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "path is required for operation %s", a.Operation)
	}
	session := t.session(ctx)
	var text string
	var err error
	switch a.Operation {
	case opRestore:
		text, err = t.restore(session, a)
	case opListBackups:
		text, err = t.listBackups(session, a)
	default:
		text, err = t.modify(session, a)
	}
	if err != nil {
		return tools.Result{}, err
	}
	return tools.TextResult(text), nil
}
