// Package write is the built-in `write` tool: it creates, overwrites and
// appends to files in a workspace (see tools/workspace), always atomically,
// so that a reader, or a crash, never sees a half-written file.
package write

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

// Name is the builtin name.
const Name = "write"

// Config configures a write tool.
type Config struct {
	filetool.WorkspaceConfig
	MaxFileSize     int64 `json:"maxFileSize" jsonschema:"Largest file, in bytes, a write may produce (for append: the file after appending)."`
	AppendSeparator bool  `json:"appendSeparator" jsonschema:"Whether mode append puts a timestamp separator line (--- appended <time> ---) before each appended text, journal style. Turn it off for structured files such as JSON lines or CSV: append then adds the content exactly as given."`
}

// Defaults are the values of every field a config leaves out.
var Defaults = Config{
	MaxFileSize:     10 * filetool.MiB,
	AppendSeparator: true,
}

// Modes.
const (
	modeCreate    = "create"
	modeOverwrite = "overwrite"
	modeAppend    = "append"
)

// newFilePerm is the mode of files the tool creates. Existing files keep
// theirs.
const newFilePerm = 0o644

// Args are the call arguments.
type Args struct {
	Path    string  `json:"path" jsonschema:"File to write, relative to the workspace. Missing parent directories are created."`
	Content *string `json:"content" jsonschema:"The text to write. May be empty for create and overwrite (an empty file)."`
	Mode    string  `json:"mode,omitempty" jsonschema:"create (default): make a new file, failing if it exists; overwrite: replace the whole file, or create it; append: add content at the end."`
}

func init() {
	tools.MustRegister(tools.Definition{
		Name:         Name,
		Description:  "Create, overwrite or append to files, atomically (workspace-confined).",
		ConfigSchema: tools.SchemaFor(Defaults),
		ArgsSchema:   argsSchema,
		New:          New,
	})
}

var argsSchema = tools.ArgsSchema[Args](map[string][]string{"mode": {modeCreate, modeOverwrite, modeAppend}})

// Tool is a write tool bound to one workspace.
type Tool struct {
	cfg   Config
	ws    *workspace.Workspace
	locks filetool.PathLocks
	now   func() time.Time // the separator's clock; tests replace it
}

// New is the factory: it decodes and validates config and opens the
// workspace.
func New(bc tools.BuildContext, config json.RawMessage) (tools.Tool, error) {
	cfg := Defaults
	if err := tools.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	if err := filetool.CheckRange("maxFileSize", cfg.MaxFileSize, 1, 1<<30); err != nil {
		return nil, err
	}
	ws, err := cfg.Open(bc)
	if err != nil {
		return nil, err
	}
	return &Tool{cfg: cfg, ws: ws, now: time.Now}, nil
}

// Info implements tools.Tool.
func (t *Tool) Info() tools.Info {
	desc := "Write a file in the workspace, atomically. mode \"create\" (default) makes a new file and fails if it already exists; " +
		"\"overwrite\" replaces the whole file; \"append\" adds content at the end"
	if t.cfg.AppendSeparator {
		desc += ", after a timestamp separator line"
	} else {
		desc += " exactly as given (include your own newlines)"
	}
	desc += ". To change part of an existing file, use the edit tool instead."
	return tools.Info{Name: Name, Description: desc, Parameters: argsSchema}
}

// Close releases the workspace.
func (t *Tool) Close() error { return t.ws.Close() }

// Call implements tools.Tool.
func (t *Tool) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var a Args
	if err := tools.DecodeArgs(raw, &a); err != nil {
		return tools.Result{}, err
	}
	if strings.TrimSpace(a.Path) == "" {
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "path is required")
	}
	if a.Content == nil {
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "content is required (use \"\" for an empty file)")
	}
	if strings.HasSuffix(a.Path, "/") {
		return tools.Result{}, tools.Errorf(tools.ErrInvalidPath, "%q names a directory; give a file name", a.Path)
	}
	if a.Mode == "" {
		a.Mode = modeCreate
	}
	switch a.Mode {
	case modeCreate, modeOverwrite, modeAppend:
	default:
		return tools.Result{}, tools.Errorf(tools.ErrInvalidArgs, "unknown mode %q; use create, overwrite or append", a.Mode)
	}
	if err := ctx.Err(); err != nil {
		return tools.Result{}, filetool.CtxError(err, "write")
	}
	rel, err := t.ws.ResolveNew(a.Path)
	if err != nil {
		return tools.Result{}, err
	}
	if rel == "." {
		return tools.Result{}, tools.Errorf(tools.ErrInvalidPath, "%q names the workspace directory; give a file name", a.Path)
	}
	unlock := t.locks.Lock(rel)
	defer unlock()
	var text string
	switch a.Mode {
	case modeCreate:
		text, err = t.create(rel, *a.Content)
	case modeOverwrite:
		text, err = t.overwrite(rel, *a.Content)
	case modeAppend:
		text, err = t.append(rel, *a.Content)
	}
	if err != nil {
		return tools.Result{}, err
	}
	return tools.TextResult(text), nil
}
