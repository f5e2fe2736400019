//go:build !unix

package mcptool

import (
	"os"
	"os/exec"
)

// inOwnGroup does nothing: this system has no Unix process groups.
func inOwnGroup(*exec.Cmd) {}

// signalGroup can only kill the server itself here; there is no polite
// signal to send first.
func signalGroup(pid int, force bool) {
	if !force {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
