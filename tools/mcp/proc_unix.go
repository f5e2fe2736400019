//go:build unix

package mcptool

import (
	"os/exec"
	"syscall"
)

// inOwnGroup makes the server the leader of a new process group, so that it
// and every process it starts (npx starts node, uvx starts python) can be
// stopped together.
func inOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGTERM (or SIGKILL when force is set) to the process
// group led by pid. A group that is already gone is not an error.
func signalGroup(pid int, force bool) {
	sig := syscall.SIGTERM
	if force {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}
