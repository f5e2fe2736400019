package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The environment and the command line a process starts with stay readable
// at /proc/<pid>/environ and /proc/<pid>/cmdline for its whole life,
// whatever it changes later; cmdline is readable by every process on the
// machine. A command an agent runs could read API keys there, through an
// interpreter the bash policy cannot see into. So, before anything else,
// ruleagent re-executes itself with secret variables removed from its
// environment block and secret flags (--global api_key=..., --token ...)
// removed from its arguments, handing them over in a memfd; they live on
// only inside the Go process (os.Args and the environment as Go sees
// them). It also marks the process non-dumpable, so that processes of the
// same user (without CAP_SYS_PTRACE) cannot read its memory either.

// guardEnvironment runs at the start of main. Set RULEAGENT_KEEP_ENV=1 to
// skip the re-exec (debugging).
func guardEnvironment() {
	if fd := os.Getenv(envFD); fd != "" {
		restoreSecrets(fd)
		_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
		return
	}
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if os.Getenv("RULEAGENT_KEEP_ENV") == "1" {
		return
	}
	var clean []string
	secrets := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if isSecretVar(k, v) {
			secrets[k] = v
			continue
		}
		clean = append(clean, kv)
	}
	cleanArgs, argsHidden := withoutSecretArgs(os.Args)
	if len(secrets) == 0 && !argsHidden {
		return
	}
	fd, err := unix.MemfdCreate("ruleagent-env", 0) // no MFD_CLOEXEC: it must survive exec
	if err != nil {
		fmt.Fprintf(os.Stderr, "ruleagent: warning: could not hide secret variables from child processes: %v\n", err)
		return
	}
	f := os.NewFile(uintptr(fd), "ruleagent-env")
	if err := json.NewEncoder(f).Encode(handover{Env: secrets, Args: os.Args}); err != nil {
		f.Close()
		return
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return
	}
	clean = append(clean, envFD+"="+strconv.Itoa(fd))
	err = syscall.Exec("/proc/self/exe", cleanArgs, clean)
	// Exec only returns on failure: go on with the environment as it is.
	f.Close()
	fmt.Fprintf(os.Stderr, "ruleagent: warning: could not hide secret variables from child processes: %v\n", err)
}

func restoreSecrets(fdText string) {
	os.Unsetenv(envFD)
	fd, err := strconv.Atoi(fdText)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "ruleagent-env")
	defer f.Close()
	var h handover
	if json.NewDecoder(f).Decode(&h) != nil {
		return
	}
	for k, v := range h.Env {
		os.Setenv(k, v)
	}
	if len(h.Args) > 0 {
		os.Args = h.Args
	}
}

// handover is what the re-executed process receives in the memfd.
type handover struct {
	Env  map[string]string `json:"env"`
	Args []string          `json:"args"`
}
