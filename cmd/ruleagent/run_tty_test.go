//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// TestMain lets a test run this package's test binary as the ruleagent
// command itself (main, signals included): see asCommand.
func TestMain(m *testing.M) {
	if os.Getenv("RULEAGENT_TEST_AS_COMMAND") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// asCommand is `ruleagent args...` as a process of its own: this test
// binary, which runs main when RULEAGENT_TEST_AS_COMMAND is set.
func asCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "RULEAGENT_TEST_AS_COMMAND=1")
	return cmd
}

// ptyOutput collects what a terminal shows.
type ptyOutput struct {
	buf  bytes.Buffer
	done chan struct{}
}

func readPTY(t *testing.T, ptmx *os.File) *ptyOutput {
	o := &ptyOutput{done: make(chan struct{})}
	go func() {
		defer close(o.done)
		// Reading the master fails with EIO once the terminal's last
		// writer has closed it.
		_, _ = io.Copy(&o.buf, ptmx)
	}()
	t.Cleanup(func() { ptmx.Close() })
	return o
}

func (o *ptyOutput) wait(t *testing.T) string {
	t.Helper()
	select {
	case <-o.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the terminal's output did not end")
	}
	return o.buf.String()
}

// TestRunStatusLineOnATerminal: on a terminal, a status line says what
// the run waits for until the first token, on stderr; it is erased before
// the answer, which is printed whole. Piped or in --json mode, there is
// none.
func TestRunStatusLineOnATerminal(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: "Hello there.", ChunkSize: 64, ChunkDelay: 400 * time.Millisecond}))
	setLLM(t, srv.URL)
	for _, tc := range []struct {
		name   string
		args   []string
		status bool
	}{
		{"terminal", nil, true},
		{"json", []string{"--json"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Fatal(err)
			}
			shown := readPTY(t, ptmx)
			args := append([]string{"run", repoChain("assistant.json"), "--input", "hi"}, tc.args...)
			code := run(context.Background(), args, nil, tty, tty)
			tty.Close()
			got := shown.wait(t)
			if code != 0 {
				t.Fatalf("exit %d:\n%q", code, got)
			}
			before, after, found := strings.Cut(got, "Hello there.")
			if !found {
				t.Fatalf("no answer:\n%q", got)
			}
			waited := strings.Contains(before, "⠋ ") && strings.Contains(before, "waiting for the model · ")
			if waited != tc.status || strings.Contains(after, "⠙") || strings.Contains(after, "waiting for") {
				t.Fatalf("status line shown %v, want %v:\n%q", waited, tc.status, got)
			}
			if tc.status && !strings.HasSuffix(before, "\r\x1b[K") {
				t.Fatalf("the status line was not erased before the answer:\n%q", got)
			}
		})
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"run", repoChain("assistant.json"), "--input", "hi"}, nil, &out, &errb); code != 0 ||
		strings.Contains(out.String()+errb.String(), "⠋") || strings.Contains(out.String()+errb.String(), "\x1b") {
		t.Fatalf("piped: exit %d\n%q\n%q", code, out.String(), errb.String())
	}
}

// TestCtrlCOnATerminal presses Ctrl+C on the terminal of a running
// `ruleagent run`: the terminal sends SIGINT, the run is cancelled (the
// LLM call ends), and the command says so and exits 130.
func TestCtrlCOnATerminal(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Hang: true}))
	setLLM(t, srv.URL)
	cmd := asCommand("run", repoChain("assistant.json"), "--input", "hi")
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	shown := readPTY(t, ptmx)
	deadline := time.Now().Add(20 * time.Second)
	for len(srv.Requests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run did not call the LLM")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := ptmx.Write([]byte{0x03}); err != nil { // Ctrl+C
		t.Fatal(err)
	}
	err = cmd.Wait()
	got := shown.wait(t)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v\n%q", err, got)
	}
	if !strings.Contains(got, "ruleagent: the run was cancelled by the user (Ctrl+C)\r\n") || strings.Contains(got, "went away") {
		t.Fatalf("terminal:\n%q", got)
	}
	if !srv.Requests()[0].Aborted() {
		t.Fatal("the LLM call goes on")
	}
}
