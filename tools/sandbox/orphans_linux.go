package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The helper is a child subreaper: a process a command started and left
// behind outside its process group (a new session, its parent gone) is
// re-parented to the helper rather than to init, and killed once a command
// ends. The call's process-group kill cannot reach such a process; this
// can, whatever the command ran to detach it.

// becomeSubreaper makes the helper adopt its commands' orphans.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// killOrphans kills and reaps the helper's children that are not the
// shells of commands still running: the orphans it adopted, and any
// orphan's own children, re-parented in turn as their parent dies.
func (h *helper) killOrphans() {
	h.spawn.Lock()
	defer h.spawn.Unlock()
	for range 8 {
		orphans := 0
		for _, pid := range childrenOf(os.Getpid()) {
			h.mu.Lock()
			running := h.active[pid]
			h.mu.Unlock()
			if running {
				continue
			}
			orphans++
			_ = unix.Kill(pid, unix.SIGKILL)
			var ws unix.WaitStatus
			for {
				if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
					break
				}
			}
		}
		if orphans == 0 {
			return
		}
	}
}

// childrenOf lists the children of process pid: from the kernel's
// per-thread children lists where it keeps them, else by reading every
// process's parent.
func childrenOf(pid int) []int {
	var out []int
	lists, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	found := false
	for _, l := range lists {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		found = true
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	if found {
		return out
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(b)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) >= 2 && f[1] == strconv.Itoa(pid) {
			if n, err := strconv.Atoi(filepath.Base(filepath.Dir(s))); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
