// Package filetool holds what the built-in file tools (read, write and edit)
// share besides text handling: the workspace part of their configuration,
// limit checks that name the faulty field, strict decoding of the model's
// arguments, and per-path locks.
package filetool

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

// StateDir is the workspace sub-directory where tools keep their own state.
const StateDir = ".ruleagent"

// BackupDir holds edit's per-session backups. It is denied to every file
// tool the model drives, so a session can neither read another session's
// backups nor plant a forged backup for it; only edit's backup store, which
// opens the directory as a workspace of its own, reaches inside.
const BackupDir = StateDir + "/backups"

// MiB is a mebibyte, for size defaults.
const MiB = 1 << 20

// WorkspaceConfig is the part of a file tool's config that says where it may
// work. Tools embed it so that every file tool spells it the same way.
type WorkspaceConfig struct {
	WorkDir string   `json:"workDir,omitempty" jsonschema:"Directory the tool is confined to. Paths are relative to it; absolute paths must lie inside it; symlinks may not lead out of it. Empty means the agent's workspace directory."`
	Deny    []string `json:"deny,omitempty" jsonschema:"Workspace-relative sub-paths (files or directories) the tool may not read, write or even list, for example [\".git\", \"secrets\"]. A denied directory denies everything under it, also when reached through a symlink."`
}

// Open validates the config and opens the workspace it describes, with
// BackupDir always denied. Errors are *tools.ConfigError naming the field.
func (c WorkspaceConfig) Open(bc tools.BuildContext) (*workspace.Workspace, error) {
	deny := make([]string, 0, len(c.Deny)+1)
	for i, d := range c.Deny {
		if err := checkDenyEntry(d); err != nil {
			return nil, &tools.ConfigError{Path: fmt.Sprintf("deny[%d]", i), Msg: err.Error(), Err: err}
		}
		deny = append(deny, d)
	}
	deny = append(deny, BackupDir)
	dir := c.WorkDir
	if dir == "" {
		dir = bc.WorkDir
	}
	ws, err := workspace.Open(dir, workspace.Options{Deny: deny, ServerPaths: bc.ServerPaths})
	if err != nil {
		return nil, &tools.ConfigError{Path: "workDir", Msg: err.Error(), Err: err}
	}
	return ws, nil
}

// checkDenyEntry mirrors the rule workspace.Open applies, so that the error
// can name the entry's index instead of failing on the whole list.
func checkDenyEntry(d string) error {
	c := path.Clean(filepath.ToSlash(strings.TrimSpace(d)))
	c = strings.TrimPrefix(c, "/")
	if c == "" || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("%q must name a path inside the workspace, such as \"secrets\" or \"config/keys.json\"", d)
	}
	return nil
}

// CheckRange returns a *tools.ConfigError naming field when v is outside
// [min, max]. Zero is never silently replaced by a default: a config that
// sets a limit to 0 is refused.
func CheckRange(field string, v, min, max int64) error {
	if v < min || v > max {
		return &tools.ConfigError{Path: field, Msg: fmt.Sprintf("must be between %d and %d, got %d", min, max, v)}
	}
	return nil
}
