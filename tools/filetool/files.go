package filetool

import (
	"context"
	"errors"
	"io/fs"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

// StatFile resolves p and requires it to name a regular file. It runs
// before any open: opening a FIFO for reading blocks until a writer appears,
// which would hang the call beyond the reach of its context, and a device
// can stream forever.
func StatFile(ws *workspace.Workspace, p string) (string, fs.FileInfo, error) {
	rel, fi, err := ws.Stat(p)
	if err != nil {
		return "", nil, err
	}
	if fi.IsDir() {
		return "", nil, tools.Errorf(tools.ErrInvalidArgs, "%s is a directory, not a file", rel)
	}
	if !fi.Mode().IsRegular() {
		return "", nil, tools.Errorf(tools.ErrInvalidArgs, "%s is not a regular file (%s)", rel, fi.Mode().Type())
	}
	return rel, fi, nil
}

// CtxError turns a context's end into a typed error: ErrTimeout for a
// deadline, ErrExecutionFailed for a cancellation.
func CtxError(err error, what string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return tools.Wrap(tools.ErrTimeout, err, "%s interrupted", what)
	}
	return tools.Wrap(tools.ErrExecutionFailed, err, "%s interrupted", what)
}
