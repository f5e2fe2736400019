package bash

import (
	"syscall"
	"unsafe"
)

// waitExited blocks until the process pid has exited, without reaping it.
// While the exited leader is not reaped its process group id cannot be
// reused, so killing the group afterwards cannot hit an unrelated process.
// It reports whether it could wait.
func waitExited(pid int) bool {
	const (
		pPID    = 1
		wExited = 0x4
		wNoWait = 0x1000000
	)
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0)
		switch errno {
		case 0:
			return true
		case syscall.EINTR:
			continue
		default:
			return false
		}
	}
}
