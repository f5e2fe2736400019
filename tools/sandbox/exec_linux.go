package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Confining a long-lived process (a stdio MCP server): the binary is
// re-executed as a launcher that reads the spec, confines its own thread
// and executes the program from that thread, so the program runs confined
// from its first instruction. Its start-up cost (a few milliseconds) is
// paid once per server.

const execEnv = "RULEAGENT_SANDBOX_EXEC"

type execRequest struct {
	Spec Spec     `json:"spec"`
	Path string   `json:"path"`
	Args []string `json:"args"`
}

// Confine rewrites cmd, which must not have started, so that it runs
// confined by spec. spec.TmpRoot must exist; the caller removes it after
// the process has ended. Errors mean confinement is not available.
func Confine(cmd *exec.Cmd, spec Spec) error {
	if st := probe(); !st.Available {
		return fmt.Errorf("%s", st.Reason)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	spec.Withheld = systemWithheld()
	req := execRequest{Spec: spec, Path: cmd.Path, Args: cmd.Args}
	if len(req.Args) == 0 {
		req.Args = []string{cmd.Path}
	}
	go func() {
		_ = json.NewEncoder(w).Encode(req)
		w.Close()
	}()
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env, execEnv+"="+strconv.Itoa(fd))
	cmd.Path = "/proc/self/exe"
	cmd.Args = append([]string{"ruleagent-sandbox-exec"}, req.Args[1:]...)
	if spec.Namespaces {
		inNamespaces(cmd, spec.privateNetwork())
	}
	return nil
}

// runExec is the launcher's main function: it confines this thread and
// executes the program, or exits with status 126.
func runExec() {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "ruleagent sandbox: "+format+"\n", args...)
		os.Exit(126)
	}
	fd, err := strconv.Atoi(os.Getenv(execEnv))
	os.Unsetenv(execEnv)
	if err != nil {
		fail("bad %s", execEnv)
	}
	if err := enterUserNamespace(); err != nil {
		fail("%v", err)
	}
	f := os.NewFile(uintptr(fd), "spec")
	var req execRequest
	err = json.NewDecoder(f).Decode(&req)
	f.Close()
	if err != nil {
		fail("reading the spec: %v", err)
	}
	runtime.LockOSThread()
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		fail("the kernel has no Landlock")
	}
	spec := req.Spec
	var fc facts
	if spec.Namespaces {
		prepareNamespaces(&spec, &fc)
		if fc.Error != "" {
			fail("%s", fc.Error)
		}
	}
	dir, err := os.MkdirTemp(spec.TmpRoot, "run-")
	if err != nil {
		fail("private temporary directory: %v", err)
	}
	rs, err := buildRuleset(&spec, abi, dir, newReadPlan(&spec))
	if err != nil {
		fail("%v", err)
	}
	filter, err := seccompProgram(&spec)
	if err != nil {
		fail("%v", err)
	}
	if err := restrictThread(rs, filter); err != nil {
		fail("%v", err)
	}
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	env = append(env, "TMPDIR="+dir)
	err = unix.Exec(req.Path, req.Args, env)
	fail("%s: %v", req.Path, err)
}
