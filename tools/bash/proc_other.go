//go:build !unix

package bash

import (
	"errors"
	"os/exec"
)

var errNoProcessGroups = errors.New("the bash tool needs Unix process groups, which this system does not have")

func startInGroup(*exec.Cmd) error { return errNoProcessGroups }
func killGroup(int) error          { return errNoProcessGroups }
func waitExited(int) bool          { return false }
