package main

import (
	"path/filepath"

	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// setSandboxDefault applies a --sandbox flag: the mode of bash tools that
// set none, and the data directory, which no confined command may read.
func setSandboxDefault(mode, dataDir string) error {
	d := sandbox.Defaults{Mode: sandbox.Mode(mode)}
	if dataDir != "" {
		if abs, err := filepath.Abs(dataDir); err == nil {
			d.Hidden = append(d.Hidden, abs)
		}
	}
	return sandbox.SetDefaults(d)
}
