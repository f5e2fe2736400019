package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary play the driver's child processes: the
// driver runs each phase by starting its own executable with -phase.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-phase" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestDriverSmoke runs the load driver small (4 turns, 3 tool calls): both
// phases complete, no run is lost, and it prints its benchstat line. It
// checks the driver, not figures (nothing here is timed).
func TestDriverSmoke(t *testing.T) {
	out := captureStdout(t, func() error {
		return orchestrate(20, scenario{Turns: 4, Chunks: 4, Delay: 2 * time.Millisecond}, true)
	})
	if !strings.HasPrefix(out, "BenchmarkLoadStreams/n=20/turns=4 1 ") || !strings.Contains(out, " 0 lost ") {
		t.Errorf("want a benchstat line with 0 lost, got:\n%s", out)
	}
}

func captureStdout(t *testing.T, f func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&buf, r); close(done) }()
	err = f()
	os.Stdout = stdout
	w.Close()
	<-done
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	return buf.String()
}
