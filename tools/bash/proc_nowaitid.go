//go:build unix && !linux

package bash

// waitExited cannot wait without reaping on this system; the caller then
// kills the group after Wait instead.
func waitExited(int) bool { return false }
