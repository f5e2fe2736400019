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

	"github.com/ruleagent/ruleagent/bench/proc"
)

type report struct {
	Phase   string  `json:"phase"`
	Runs    int     `json:"runs"`
	OK      int     `json:"ok"`
	Lost    int     `json:"lost"`
	PeakRSS float64 `json:"peakRssMiB"`
	// PeakAnon is the largest anonymous part of the RSS seen (sampled):
	// what the runs hold, without the binary's file-backed pages.
	PeakAnon float64 `json:"peakAnonMiB"`
	Seconds  float64 `json:"seconds"`
	CPUSecs  float64 `json:"cpuSeconds"`
	FirstErr string  `json:"firstError,omitempty"`
}

func main() {
	runs := flag.Int("runs", 1000, "concurrent runs")
	var sc scenario
	flag.IntVar(&sc.Turns, "turns", 1, "LLM turns per run: 1 (an answer) or 4 (three tool calls, then the answer)")
	flag.IntVar(&sc.Chunks, "chunks", 40, "content chunks of the answer")
	flag.DurationVar(&sc.Delay, "chunk-delay", 50*time.Millisecond, "delay before each streamed chunk")
	phase := flag.String("phase", "", "internal: serve, bare or agent")
	benchstat := flag.Bool("benchstat", false, "print benchstat lines (make bench) instead of a table")
	url := flag.String("url", "", "internal: the scripted server's URL")
	flag.Parse()
	proc.RaiseFileLimit()
	var err error
	switch *phase {
	case "serve":
		err = serve(sc)
	case "bare":
		err = emit(runBare(*url, *runs, sc))
	case "agent":
		err = emit(runAgent(*url, *runs, sc))
	case "":
		err = orchestrate(*runs, sc, *benchstat)
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
func orchestrate(runs int, sc scenario, benchstat bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := sc.args()
	srv := exec.Command(self, append([]string{"-phase", "serve"}, args...)...)
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

	if !benchstat {
		fmt.Printf("%d concurrent streaming runs, %d turn(s), %d-chunk answer, chunks %s apart\n\n", runs, sc.Turns, sc.Chunks, sc.Delay)
		fmt.Printf("%-28s %6s %6s %12s %9s %9s\n", "phase", "ok", "lost", "peak RSS", "wall", "CPU")
	}
	got := map[string]report{}
	for _, p := range []string{"bare", "agent"} {
		cmd := exec.CommandContext(context.Background(), self, append([]string{"-phase", p, "-url", url, "-runs", fmt.Sprint(runs)}, args...)...)
		cmd.Stderr = os.Stderr
		b, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("phase %s: %w", p, err)
		}
		var r report
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("phase %s: %w: %s", p, err, b)
		}
		got[p] = r
		if r.FirstErr != "" {
			fmt.Fprintf(os.Stderr, "%s: first error: %s\n", p, r.FirstErr)
		}
		if !benchstat {
			name := map[string]string{"bare": "bare HTTP client", "agent": "ruleagent (ai/agent node)"}[p]
			fmt.Printf("%-28s %6d %6d %9.1f MiB %8.2fs %8.2fs\n", name, r.OK, r.Lost, r.PeakRSS, r.Seconds, r.CPUSecs)
		}
	}
	bare, ag := got["bare"], got["agent"]
	if benchstat {
		fmt.Printf("BenchmarkLoadStreams/n=%d/turns=%d 1 %.4g peak-MiB %.4g bare-peak-MiB %.4g x-bare %.4g anon-MiB %.4g bare-anon-MiB %.4g x-bare-anon %d lost %.4g cpu-s %.4g bare-cpu-s\n",
			runs, sc.Turns, ag.PeakRSS, bare.PeakRSS, ag.PeakRSS/bare.PeakRSS, ag.PeakAnon, bare.PeakAnon, ag.PeakAnon/bare.PeakAnon,
			ag.Lost+bare.Lost, ag.CPUSecs, bare.CPUSecs)
	} else {
		fmt.Printf("\npeak RSS: %.2fx the bare client's (anonymous part: %.1f MiB vs %.1f MiB, %.2fx)\n",
			ag.PeakRSS/bare.PeakRSS, ag.PeakAnon, bare.PeakAnon, ag.PeakAnon/bare.PeakAnon)
	}
	if ag.Lost > 0 || bare.Lost > 0 {
		return fmt.Errorf("runs lost: %d (bare client: %d)", ag.Lost, bare.Lost)
	}
	return nil
}

// peakRSS reads the process's peak resident set size (VmHWM).
func peakRSS() float64 { return proc.StatusMiB(0, "VmHWM")[0] }

// anonSampler keeps the largest RssAnon seen, every 10 ms, until stopped.
type anonSampler struct {
	stop chan struct{}
	done chan float64
}

func sampleAnon() *anonSampler {
	s := &anonSampler{stop: make(chan struct{}), done: make(chan float64, 1)}
	go func() {
		peak := proc.StatusMiB(0, "RssAnon")[0]
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				s.done <- max(peak, proc.StatusMiB(0, "RssAnon")[0])
				return
			case <-t.C:
				peak = max(peak, proc.StatusMiB(0, "RssAnon")[0])
			}
		}
	}()
	return s
}

func (s *anonSampler) peak() float64 { close(s.stop); return <-s.done }

func drain(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}

func (sc scenario) args() []string {
	return []string{"-turns", fmt.Sprint(sc.Turns), "-chunks", fmt.Sprint(sc.Chunks), "-chunk-delay", sc.Delay.String()}
}
