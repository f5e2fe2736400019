//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

const (
	helperEnv  = "RULEAGENT_SANDBOX_HELPER"
	execEnv    = "RULEAGENT_SANDBOX_EXEC"
	nsProbeEnv = "RULEAGENT_SANDBOX_NSPROBE"
)

var errUnsupported = errors.New("Landlock needs Linux; this is " + runtime.GOOS)

func probe() Status { return Status{Reason: errUnsupported.Error()} }

func runHelper() { os.Exit(2) }
func runExec()   { os.Exit(126) }

func runNamespaceProbe() { os.Exit(2) }

// Launcher is unavailable off Linux; NewLauncher's Start always fails.
type Launcher struct{ spec Spec }

func NewLauncher(spec Spec) *Launcher { return &Launcher{spec: spec} }

type Command struct {
	Path           string
	Args           []string
	Dir            string
	Env            []string
	Run            string
	Stdout, Stderr *os.File
}

type Process struct{ Pid int }

func (l *Launcher) Start(Command) (*Process, error)                       { return nil, errUnsupported }
func (l *Launcher) Facts() (noexec, netns bool, hidden, exposed []string) { return }
func (l *Launcher) Close() error                                          { return os.RemoveAll(l.spec.TmpRoot) }
func (p *Process) Wait() (ws syscall.WaitStatus, err error)               { return ws, errUnsupported }
func (p *Process) Kill()                                                  {}

// Loaders returns nothing off Linux.
func Loaders(...string) []string { return nil }

// Confine fails off Linux.
func Confine(*exec.Cmd, Spec) error { return errUnsupported }
