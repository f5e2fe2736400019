package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/bench/proc"
)

// process is a child process of the bench: the scripted LLM, a ruleagent
// server or the bare proxy.
type process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	URL   string
}

// startSelf starts this binary in a phase that prints its URL on stdout.
func startSelf(args ...string) (*process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("%v: %w", args, err)
	}
	return &process{cmd: cmd, stdin: stdin, URL: strings.TrimSpace(line)}, nil
}

// serverOptions start one ruleagent server.
type serverOptions struct {
	bin, chains, llmURL string
	gomaxprocs          int
	// sessionStore is --session-store (memory when ""): a Redis URL makes
	// the server a replica of a fleet.
	sessionStore string
}

// startServer starts `ruleagent serve` on a free loopback port and waits
// until it answers; ready is the time from exec to its first answer.
func startServer(o serverOptions) (p *process, ready time.Duration, err error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, 0, err
	}
	data, err := os.MkdirTemp("", "ruleagent-bench-data-")
	if err != nil {
		return nil, 0, err
	}
	store := o.sessionStore
	if store == "" {
		store = "memory"
	}
	cmd := exec.Command(o.bin, "serve", "--addr", addr, "--chains", o.chains, "--data", data,
		"--session-store", store, "--audit", "off", "--log-level", "warn", "--grace", "2s",
		"--global", "llm_url="+o.llmURL, "--global", "model=bench-model", "--global", "api_key="+benchKey)
	cmd.Env = os.Environ()
	if o.gomaxprocs > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(o.gomaxprocs))
	}
	cmd.Stdout = io.Discard
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	p = &process{cmd: cmd, URL: "http://" + addr}
	// A replica of a fleet is ready once it caught up with the fleet's
	// chains; a lone server when it answers.
	probe := "/healthz"
	if o.sessionStore != "" {
		probe = "/readyz"
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		resp, err := http.Get(p.URL + probe)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, time.Since(start), nil
			}
		}
	}
	p.kill()
	return nil, 0, fmt.Errorf("ruleagent serve did not answer on %s", addr)
}

// stop interrupts the process (as Ctrl-C does) and waits for it to exit.
func (p *process) stop() (time.Duration, error) {
	start := time.Now()
	if p.stdin != nil {
		p.stdin.Close()
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(20 * time.Second):
		p.kill()
		return 0, fmt.Errorf("%s did not stop", filepath.Base(p.cmd.Path))
	}
}

func (p *process) kill() { _ = p.cmd.Process.Kill(); _, _ = p.cmd.Process.Wait() }

// rss reads the process's resident set (VmRSS) and its peak (VmHWM), MiB.
func (p *process) rss() (now, peak float64) {
	f := proc.StatusMiB(p.cmd.Process.Pid, "VmRSS", "VmHWM")
	return f[0], f[1]
}

// resetPeak sets the process's VmHWM back to its current RSS, so that a
// later peak is that of what follows.
func (p *process) resetPeak() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.cmd.Process.Pid), []byte("5"), 0)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// cpuOf reads a process's user+system CPU time.
func cpuOf(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}
