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

	"github.com/ruleagent/ruleagent/tools/scrub"
)

// The environment a process starts with stays readable at
// /proc/<pid>/environ for its whole life, whatever it unsets later. A
// command an agent runs could read the API keys there, through an
// interpreter the bash policy cannot see into. So, before anything else,
// ruleagent re-executes itself with secret variables removed from its
// environment block, handing their values over in a memfd; they live on
// only inside the Go process. It also marks the process non-dumpable, so
// that processes of the same user (without CAP_SYS_PTRACE) cannot read its
// memory either.

const envFD = "RULEAGENT_ENV_FD"

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
	if len(secrets) == 0 {
		return
	}
	fd, err := unix.MemfdCreate("ruleagent-env", 0) // no MFD_CLOEXEC: it must survive exec
	if err != nil {
		fmt.Fprintf(os.Stderr, "ruleagent: warning: could not hide secret variables from child processes: %v\n", err)
		return
	}
	f := os.NewFile(uintptr(fd), "ruleagent-env")
	if err := json.NewEncoder(f).Encode(secrets); err != nil {
		f.Close()
		return
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return
	}
	clean = append(clean, envFD+"="+strconv.Itoa(fd))
	err = syscall.Exec("/proc/self/exe", os.Args, clean)
	// Exec only returns on failure: go on with the environment as it is.
	f.Close()
	fmt.Fprintf(os.Stderr, "ruleagent: warning: could not hide secret variables from child processes: %v\n", err)
}

// isSecretVar: a variable is hidden when its name says it is a secret, or
// its value holds something the scrubber would redact (a URL with a
// password, a token).
func isSecretVar(name, value string) bool {
	if value == "" || name == envFD {
		return false
	}
	if scrub.IsSecretName(name) || strings.HasPrefix(name, "RULEAGENT_GLOBAL_") {
		return true
	}
	return scrub.New().Scrub(value) != value
}

func restoreSecrets(fdText string) {
	os.Unsetenv(envFD)
	fd, err := strconv.Atoi(fdText)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "ruleagent-env")
	defer f.Close()
	var secrets map[string]string
	if json.NewDecoder(f).Decode(&secrets) != nil {
		return
	}
	for k, v := range secrets {
		os.Setenv(k, v)
	}
}
