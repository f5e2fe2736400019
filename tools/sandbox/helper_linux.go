package sandbox

import (
	"container/list"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The helper is ruleagent itself, re-executed with helperEnv set. It reads
// its Spec from descriptor 4, sets up its namespaces, reports what it
// could set up on descriptor 3 (the control socket), and then starts one
// command per request it receives there. Each command is forked from a
// thread that confined itself with the run's ruleset, so the helper
// process as a whole stays unconfined and can serve every run.

const (
	helperEnv  = "RULEAGENT_SANDBOX_HELPER"
	controlFD  = 3
	specFD     = 4
	maxRunSets = 16
)

// request is one command to start.
type request struct {
	Path string   `json:"path"`
	Args []string `json:"args"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`
	// Run names the run, whose private temporary directory the command
	// gets.
	Run string `json:"run"`
}

// reply is what the helper says about a command: its pid, then how it
// ended; or why it could not start.
type reply struct {
	Pid    int    `json:"pid,omitempty"`
	Status *int   `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
}

type helper struct {
	spec *Spec
	abi  int
	// filter is the seccomp filter of every command.
	filter []unix.SockFilter
	// plan grants the read-only trees (guarded by mu); it is made again
	// when one of its directories changes.
	plan *readPlan
	// planGen counts the plans made; a run whose thread was confined
	// with an older one is confined again when the plan carves writable
	// trees (see addWritable), so that entries added to them since are
	// granted.
	planGen int
	mu      sync.Mutex
	runs    map[string]*list.Element
	lru     *list.List // of *runSet, most recent first
	// active holds the process groups of the commands not yet reaped.
	active map[int]bool
	// spawn is held (shared) from a command's start until it is marked
	// active, and (exclusive) while orphans are killed, so that a shell
	// just started is never taken for an orphan.
	spawn sync.RWMutex
}

type runSet struct {
	run    string
	dir    string
	gen    int // the plan its thread was confined with
	starts chan startReq
	// mu serialises starts with closing; closed is set when the run is
	// dropped and its thread told to end.
	mu     sync.Mutex
	closed bool
}

// drop ends the run's thread and removes its directory.
func (rs *runSet) drop() {
	rs.mu.Lock()
	rs.closed = true
	close(rs.starts)
	rs.mu.Unlock()
	os.RemoveAll(rs.dir)
}

// runHelper is the helper's main function; it does not return.
func runHelper() {
	// The main goroutine keeps the main thread for itself, so that no
	// command is ever forked from it: a confined goroutine that ended on
	// the main thread would leave it confined (Go cannot end the main
	// thread), and the process's /proc entries, whose access the kernel
	// checks against the main thread, would be open to that run's
	// commands.
	runtime.LockOSThread()
	os.Unsetenv(helperEnv)
	// The user namespace's maps are written while the process is still
	// dumpable (its /proc files are its own); then nothing of the same
	// user may read its memory.
	usernsErr := enterUserNamespace()
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	subreaperErr := becomeSubreaper()
	unix.CloseOnExec(controlFD)
	ctl, err := net.FileConn(os.NewFile(controlFD, "control"))
	if err != nil {
		os.Exit(2)
	}
	conn := ctl.(*net.UnixConn)
	var spec Spec
	specFile := os.NewFile(specFD, "spec")
	err = json.NewDecoder(specFile).Decode(&spec)
	specFile.Close()
	f := facts{}
	if err != nil {
		f.Error = "reading the sandbox spec: " + err.Error()
	}
	abi, abiErr := ll.LandlockGetABIVersion()
	f.ABI = abi
	if abiErr != nil || abi < 1 {
		f.Error = "the kernel has no Landlock"
	}
	if f.Error == "" && usernsErr != nil {
		f.Error = usernsErr.Error()
	}
	if f.Error == "" && subreaperErr != nil {
		f.Error = "cannot adopt the commands' orphans (PR_SET_CHILD_SUBREAPER): " + subreaperErr.Error()
	}
	if f.Error == "" && spec.Namespaces {
		prepareNamespaces(&spec, &f)
	} else {
		f.Exposed = exposedWithoutNamespaces(&spec)
	}
	h := &helper{spec: &spec, abi: abi, runs: map[string]*list.Element{}, lru: list.New(), active: map[int]bool{}}
	if f.Error == "" {
		if h.filter, err = seccompProgram(&spec); err != nil {
			f.Error = err.Error()
		}
	}
	if f.Error == "" {
		// Build one ruleset now, so that a spec the kernel refuses is
		// reported at start rather than on the first command.
		if _, err := h.ruleset(""); err != nil {
			f.Error = err.Error()
		}
	}
	b, _ := json.Marshal(f)
	if _, err := conn.Write(b); err != nil || f.Error != "" {
		os.Exit(1)
	}
	h.serve(conn)
	h.cleanup()
	os.Exit(0)
}

// serve starts the commands the server asks for until it closes the
// control socket. Commands still running then are killed.
func (h *helper) serve(conn *net.UnixConn) {
	buf := make([]byte, 1<<20)
	oob := make([]byte, unix.CmsgSpace(3*4))
	var wg sync.WaitGroup
	for {
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			break
		}
		fds := receivedFDs(oob[:oobn])
		if len(fds) != 3 {
			closeAll(fds)
			continue
		}
		var req request
		if err := json.Unmarshal(buf[:n], &req); err != nil {
			closeAll(fds)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.run(req, fds[0], fds[1], fds[2])
		}()
	}
	// The server is gone: kill every command still running, and wait for
	// them to be reaped.
	h.mu.Lock()
	for pid := range h.active {
		_ = unix.Kill(-pid, unix.SIGKILL)
	}
	h.mu.Unlock()
	wg.Wait()
}

func receivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// run starts one command and reports on it.
func (h *helper) run(req request, sockFD, outFD, errFD int) {
	// Non-blocking, so that waiting for a kill message parks a goroutine
	// in the poller rather than holding a thread.
	_ = unix.SetNonblock(sockFD, true)
	sock := os.NewFile(uintptr(sockFD), "command")
	stdout := os.NewFile(uintptr(outFD), "stdout")
	stderr := os.NewFile(uintptr(errFD), "stderr")
	defer sock.Close()
	send := func(r reply) {
		b, _ := json.Marshal(r)
		_, _ = sock.Write(b)
	}
	devNull, _ := os.Open(os.DevNull)
	cmd := &exec.Cmd{Path: req.Path, Args: req.Args, Dir: req.Dir, Stdin: devNull, Stdout: stdout, Stderr: stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	h.spawn.RLock()
	err := h.start(req.Run, cmd, req.Env)
	if err == nil {
		h.mu.Lock()
		h.active[cmd.Process.Pid] = true
		h.mu.Unlock()
	}
	h.spawn.RUnlock()
	stdout.Close()
	stderr.Close()
	if devNull != nil {
		devNull.Close()
	}
	if err != nil {
		send(reply{Error: err.Error()})
		return
	}
	pid := cmd.Process.Pid
	send(reply{Pid: pid})
	var mu sync.Mutex
	reaped := false
	killGroup := func() {
		mu.Lock()
		defer mu.Unlock()
		if !reaped {
			_ = unix.Kill(-pid, unix.SIGKILL)
		}
	}
	go func() {
		// Any message, or the socket closing, means: kill it now.
		b := make([]byte, 16)
		_, _ = sock.Read(b)
		killGroup()
	}()
	waitExited(pid)
	// The leader has exited but is not reaped, so its group id cannot be
	// reused: kill what it left behind, then reap it.
	mu.Lock()
	_ = unix.Kill(-pid, unix.SIGKILL)
	reaped = true
	mu.Unlock()
	_ = cmd.Wait()
	h.mu.Lock()
	delete(h.active, pid)
	h.mu.Unlock()
	status := int(cmd.ProcessState.Sys().(syscall.WaitStatus))
	send(reply{Status: &status})
	// What the command detached from its group does not outlive it.
	h.killOrphans()
}

// start starts cmd from the confined thread of its run.
func (h *helper) start(run string, cmd *exec.Cmd, env []string) error {
	for attempt := 0; attempt < 2; attempt++ {
		rs, err := h.ruleset(run)
		if err != nil {
			return err
		}
		cmd.Env = withRunDir(env, rs.dir)
		rs.mu.Lock()
		if rs.closed {
			rs.mu.Unlock()
			continue // evicted meanwhile: make it again
		}
		done := make(chan error, 1)
		rs.starts <- startReq{cmd: cmd, done: done}
		err = <-done
		rs.mu.Unlock()
		return err
	}
	return fmt.Errorf("the run's sandbox was dropped twice while starting a command")
}

// startReq asks a run's confined thread to start a command.
type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

// confinedThread owns one OS thread, confined with the run's ruleset, and
// forks the run's commands from it: they inherit its confinement. The
// domain is made once per run, not per command, because making one copies
// every rule. The thread ends with the goroutine (it is never unlocked).
func confinedThread(rulesetFD int, filter []unix.SockFilter, starts chan startReq, ready chan error) {
	runtime.LockOSThread()
	err := restrictThread(rulesetFD, filter)
	ready <- err
	for req := range starts {
		if err != nil {
			req.done <- err
			continue
		}
		req.done <- req.cmd.Start()
	}
}

// withRunDir points HOME and TMPDIR at the run's private directory: the
// user's home is not readable, and programs that want one get an empty,
// writable one.
func withRunDir(env []string, dir string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "TMPDIR=") || strings.HasPrefix(kv, "XDG_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "HOME="+dir, "TMPDIR="+dir)
}

// waitExited blocks until pid has exited, without reaping it.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// ruleset returns the ruleset of a run, with its private directory,
// making both on first use. The least recently used run's are dropped
// beyond maxRunSets.
func (h *helper) ruleset(run string) (*runSet, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.runs[run]; ok {
		h.lru.MoveToFront(e)
		rs := e.Value.(*runSet)
		if len(h.plan.carved) > 0 {
			if !h.plan.current() {
				h.newPlan()
			}
			if rs.gen != h.planGen {
				return rs, h.reconfine(rs)
			}
		}
		return rs, nil
	}
	dir, err := os.MkdirTemp(h.spec.TmpRoot, "run-")
	if err != nil {
		return nil, fmt.Errorf("private temporary directory: %w", err)
	}
	if h.plan == nil || !h.plan.current() {
		h.newPlan()
	}
	rs := &runSet{run: run, dir: dir, gen: h.planGen}
	if rs.starts, err = h.confine(dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	h.runs[run] = h.lru.PushFront(rs)
	if h.lru.Len() > maxRunSets {
		old := h.lru.Remove(h.lru.Back()).(*runSet)
		delete(h.runs, old.run)
		old.drop()
	}
	return rs, nil
}

// newPlan makes the plan again (under h.mu).
func (h *helper) newPlan() {
	if h.plan != nil {
		h.plan.Close()
	}
	h.plan = newReadPlan(h.spec)
	h.planGen++
}

// confine starts a thread confined with the current plan and dir as the
// run's private directory, and returns the channel it takes its starts
// from.
func (h *helper) confine(dir string) (chan startReq, error) {
	fd, err := buildRuleset(h.spec, h.abi, dir, h.plan)
	if err != nil {
		return nil, err
	}
	starts := make(chan startReq)
	ready := make(chan error, 1)
	go confinedThread(fd, h.filter, starts, ready)
	err = <-ready
	unix.Close(fd)
	if err != nil {
		close(starts)
		return nil, err
	}
	return starts, nil
}

// reconfine gives rs a thread confined with the current plan, and ends
// its old one (under h.mu).
func (h *helper) reconfine(rs *runSet) error {
	starts, err := h.confine(rs.dir)
	if err != nil {
		return err
	}
	rs.mu.Lock()
	old := rs.starts
	rs.starts, rs.gen = starts, h.planGen
	rs.mu.Unlock()
	close(old)
	return nil
}

func (h *helper) cleanup() {
	h.mu.Lock()
	for e := h.lru.Front(); e != nil; e = e.Next() {
		e.Value.(*runSet).drop()
	}
	h.mu.Unlock()
	h.killOrphans()
}
