// Package fleettest runs a fleet for tests: a real redis-server
// (internal/redistest), N `ruleagent serve` replicas on loopback ports
// (the binary built once per test binary) and Debian's nginx in front of
// them as a round-robin load balancer with no sticky sessions, proxy
// buffering off (SSE goes through as it is written) and HTTP/1.1 to the
// replicas. Every response through nginx carries X-Upstream, the replica
// that answered.
//
// Faults: Replica.Kill (kill -9), Replica.Term (SIGTERM, waiting for the
// exit), Replica.Pause/Resume (SIGSTOP/SIGCONT), Replica.Start (again, on
// the same port and data folder); Redis freezes and restarts through
// Fleet.Redis (redistest).
//
// A test binary using it calls Main from its TestMain, so that the binary
// it built is removed at the end. Without nginx or redis-server a test is
// skipped, except under CI, where it fails: .ci/run installs both.
package fleettest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/proctest"
	"github.com/ruleagent/ruleagent/internal/redistest"
)

// Options configure a fleet.
type Options struct {
	// Replicas is how many `ruleagent serve` run (3 when 0).
	Replicas int
	// Chains is the chains folder every replica serves (an empty folder
	// when "").
	Chains string
	// Args are added to each replica's serve command (for example
	// --global llm_url=...). The fleet adds --addr, --chains, --data and,
	// unless NoRedis, --session-store with the Redis URL.
	Args []string
	// Env is added to each replica's environment.
	Env []string
	// NoRedis runs the replicas without Redis (each on its embedded
	// stores): the one-machine case, usually with Replicas 1.
	NoRedis bool
	// Redis configures the redis-server (Persist keeps its data across a
	// restart).
	Redis redistest.Options
}

// Fleet is a running fleet.
type Fleet struct {
	// Redis is the fleet's Redis (nil with NoRedis).
	Redis *redistest.Server
	// Replicas are the `ruleagent serve` processes.
	Replicas []*Replica
	// LB is nginx in front of them; URL is its base URL.
	LB  *Nginx
	URL string
}

// Start starts a fleet for t; everything stops when t ends.
func Start(t testing.TB, o Options) *Fleet {
	t.Helper()
	need(t, "nginx")
	bin := Binary(t)
	if o.Replicas <= 0 {
		o.Replicas = 3
	}
	if o.Chains == "" {
		o.Chains = t.TempDir()
	}
	f := &Fleet{}
	args := append([]string{}, o.Args...)
	if !o.NoRedis {
		f.Redis = redistest.StartWith(t, o.Redis)
		args = append(args, "--session-store", f.Redis.URL)
	}
	var addrs []string
	for i := range o.Replicas {
		r := &Replica{Index: i, Addr: proctest.FreeAddr(t), bin: bin, data: t.TempDir(), chains: o.Chains, args: args, env: o.Env, t: t}
		r.URL = "http://" + r.Addr
		t.Cleanup(r.stop)
		r.Start(t)
		f.Replicas = append(f.Replicas, r)
		addrs = append(addrs, r.Addr)
	}
	f.LB = StartNginx(t, addrs)
	f.URL = f.LB.URL
	return f
}

// Replica is one `ruleagent serve`.
type Replica struct {
	Index int
	// Addr is its loopback address; URL its base URL.
	Addr, URL string

	t      testing.TB
	bin    string
	data   string
	chains string
	args   []string
	env    []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	logs *proctest.Buffer
	// exit is the exit status of the last process (after Term).
	exit error
}

// Start starts the replica (again), on its port and data folder, and
// waits until it answers /healthz.
func (r *Replica) Start(t testing.TB) {
	t.Helper()
	args := append([]string{"serve", "--addr", r.Addr, "--chains", r.chains, "--data", r.data}, r.args...)
	cmd := exec.Command(r.bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.data}, r.env...)
	logs := &proctest.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	r.mu.Lock()
	r.cmd, r.done, r.logs, r.exit = cmd, done, logs, nil
	r.mu.Unlock()
	go func() {
		err := cmd.Wait()
		r.mu.Lock()
		r.exit = err
		r.mu.Unlock()
		close(done)
	}()
	proctest.WaitHTTP(t, r.URL+"/healthz", done, 30*time.Second, fmt.Sprintf("replica %d", r.Index), logs.String)
}

// Kill kills the replica (SIGKILL) and waits for it to be gone.
func (r *Replica) Kill() { r.signal(syscall.SIGKILL, time.Minute) }

// Term sends SIGTERM and waits up to d for the replica to exit; it
// reports whether it did.
func (r *Replica) Term(d time.Duration) bool { return r.signal(syscall.SIGTERM, d) }

// Pause stops the replica's process (SIGSTOP): its connections stay open
// and it answers nothing. Resume continues it.
func (r *Replica) Pause() { r.signal(syscall.SIGSTOP, 0) }

// Resume continues a paused replica (SIGCONT).
func (r *Replica) Resume() { r.signal(syscall.SIGCONT, 0) }

// Running reports whether the replica's process runs.
func (r *Replica) Running() bool {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Exit is the last process's exit status (nil for a clean exit).
func (r *Replica) Exit() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exit
}

// Logs returns what the replica's current process printed.
func (r *Replica) Logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

// signal sends sig; with wait > 0 it waits that long for the exit, and
// reports whether the process ended.
func (r *Replica) signal(sig syscall.Signal, wait time.Duration) bool {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.mu.Unlock()
	if cmd == nil {
		return true
	}
	select {
	case <-done:
		return true
	default:
	}
	_ = cmd.Process.Signal(sig)
	if wait <= 0 {
		return false
	}
	select {
	case <-done:
		return true
	case <-time.After(wait):
		return false
	}
}

func (r *Replica) stop() {
	r.Resume()
	if !r.signal(syscall.SIGKILL, 30*time.Second) {
		r.t.Errorf("replica %d did not die", r.Index)
	}
}

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Binary returns the ruleagent binary, built once per test binary.
func Binary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "fleettest-")
		if build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "ruleagent")
		cmd := exec.Command("go", "build", "-o", build.bin, "github.com/ruleagent/ruleagent/cmd/ruleagent")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

// Main runs the tests and removes the binary Binary built.
func Main(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// need skips t without the program name (fails it under CI).
func need(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	if _, err := os.Stat("/usr/sbin/" + name); err == nil {
		return
	}
	msg := name + " is missing: apt-get install -y --no-install-recommends " + name
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
