//go:build unix

package bash

import (
	"os/exec"
	"syscall"
)

// startInGroup makes the command the leader of a new process group, so that
// it and everything it starts can be killed together.
func startInGroup(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return nil
}

// killGroup sends SIGKILL to every process in the group led by pid.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}
