// Command load is the load driver of `make bench`: it runs many concurrent
// streaming agent runs against the scripted LLM and reports the peak memory
// of the process, against a bare HTTP client making the same requests.
//
// Each phase runs in a process of its own (the scripted server too), so
// each peak RSS is that phase's alone:
//
//	go run ./bench/load [-runs 1000] [-chunk-delay 10ms]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

type report struct {
	Phase    string  `json:"phase"`
	Runs     int     `json:"runs"`
	OK       int     `json:"ok"`
	Lost     int     `json:"lost"`
	PeakRSS  float64 `json:"peakRssMiB"`
	Seconds  float64 `json:"seconds"`
	CPUSecs  float64 `json:"cpuSeconds"`
	FirstErr string  `json:"firstError,omitempty"`
}

func main() {
	runs := flag.Int("runs", 1000, "concurrent runs")
	delay := flag.Duration("chunk-delay", 10*time.Millisecond, "delay between streamed chunks")
	phase := flag.String("phase", "", "internal: serve, bare or agent")
	url := flag.String("url", "", "internal: the scripted server's URL")
	flag.Parse()
	raiseFileLimit()
	var err error
	switch *phase {
	case "serve":
		err = serve(*delay)
	case "bare":
		err = emit(runBare(*url, *runs))
	case "agent":
		err = emit(runAgent(*url, *runs))
	case "":
		err = orchestrate(*runs, *delay)
	default:
		err = fmt.Errorf("unknown phase %q", *phase)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func emit(r report, err error) error {
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// orchestrate starts the server, then each phase, and prints the table.
func orchestrate(runs int, delay time.Duration) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv := exec.Command(self, "-phase", "serve", "-chunk-delay", delay.String())
	stdin, _ := srv.StdinPipe()
	out, _ := srv.StdoutPipe()
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { stdin.Close(); _ = srv.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	url := strings.TrimSpace(line)

	fmt.Printf("%d concurrent streaming runs, 4 turns and 3 tool calls each, chunks %s apart\n\n", runs, delay)
	fmt.Printf("%-28s %6s %6s %12s %9s %9s\n", "phase", "ok", "lost", "peak RSS", "wall", "CPU")
	for _, p := range []string{"bare", "agent"} {
		cmd := exec.CommandContext(context.Background(), self, "-phase", p, "-url", url, "-runs", fmt.Sprint(runs))
		cmd.Stderr = os.Stderr
		b, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("phase %s: %w", p, err)
		}
		var r report
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("phase %s: %w: %s", p, err, b)
		}
		name := map[string]string{"bare": "bare HTTP client", "agent": "ruleagent (ai/agent node)"}[p]
		fmt.Printf("%-28s %6d %6d %9.1f MiB %8.2fs %8.2fs\n", name, r.OK, r.Lost, r.PeakRSS, r.Seconds, r.CPUSecs)
		if r.FirstErr != "" {
			fmt.Printf("  first error: %s\n", r.FirstErr)
		}
	}
	return nil
}

// peakRSS reads the process's peak resident set size (VmHWM).
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

func drain(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}
