// Command report is `make bench`: it runs the Go micro-benchmarks, the
// in-process load driver (bench/load) and the through-the-server load
// client (bench/server), keeps every result line in one benchstat file
// (bench/out/latest.txt), and prints one table: each figure's median with
// its spread (min–max over the runs), the bare baseline beside it, the
// target and whether it is met, under a header naming the machine.
//
//	go run ./bench/report [-out bench/out/latest.txt] [-count 5] [-runs 3]
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/bench/proc"
)

// goBench is one `go test -bench` invocation.
type goBench struct {
	pkg, pattern string
	// benchtime, when set, replaces the default (for benchmarks whose one
	// iteration takes long).
	benchtime string
	count     int
}

func benches(count int) []goBench {
	return []goBench{
		{pkg: "./tools/", pattern: "^BenchmarkInvoke"},
		{pkg: "./agent/", pattern: "^(BenchmarkEngineTurn|BenchmarkRun4Turns3Tools|BenchmarkBareClient4Turns)$"},
		{pkg: "./agent/", pattern: "^BenchmarkFirstTokenDelay$", benchtime: "10x", count: 3},
		{pkg: "./telemetry/", pattern: "^BenchmarkOff$"},
		{pkg: "./tools/", pattern: "^BenchmarkToolSpan$"},
		{pkg: "./agent/", pattern: "^(BenchmarkChatSpan|BenchmarkTracedRun)$"},
		{pkg: "./events/", pattern: "^BenchmarkAppendJSON$"},
		{pkg: "./server/sse/", pattern: "^Benchmark(Event|Stream)$"},
		{pkg: "./server/completions/", pattern: "^BenchmarkChunkContent$"},
		{pkg: "./tools/bash/", pattern: "^BenchmarkPolicyCheck$"},
		{pkg: "./tools/bash/", pattern: "^BenchmarkSandbox(Cost|RunCost)$", count: 3},
		{pkg: "./tools/workspace/", pattern: "^BenchmarkResolve$"},
		{pkg: "./tools/scrub/", pattern: "^BenchmarkScrub$"},
		{pkg: "./server/", pattern: "^Benchmark(LLMBodyRecorded|RecordScrub)$"},
		{pkg: "./tools/netguard/", pattern: "^Benchmark(CheckAddr|Control)$"},
		{pkg: "./sessions/", pattern: "^BenchmarkSession"},
		{pkg: "./ledger/", pattern: "^BenchmarkLedgerRun$"},
	}
}

func main() {
	out := flag.String("out", "bench/out/latest.txt", "where the benchstat lines of this run go")
	count := flag.Int("count", 5, "runs of each Go benchmark")
	runs := flag.Int("runs", 3, "runs of each load driver")
	bin := flag.String("bin", "bin/ruleagent", "the ruleagent binary (make build)")
	quick := flag.Bool("quick", false, "one short run of everything (checks the pipeline; the figures mean nothing)")
	tableOnly := flag.Bool("table", false, "print the table of the results in -out, measuring nothing")
	flag.Parse()
	if *tableOnly {
		r, err := parseFile(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/report:", err)
			os.Exit(1)
		}
		m := readMachine(*bin)
		m.cpu, m.loadBefore, m.loadAfter = "results of "+*out, "see its first line", "see its last line"
		printTable(os.Stdout, m, r)
		return
	}
	if *quick {
		*count, *runs = 1, 1
		quickArgs = []string{"-quick"}
		loadArgs = []string{"-runs", "20"}
	}
	if err := run(*out, *bin, *count, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench/report:", err)
		os.Exit(1)
	}
}

func run(out, bin string, count, runs int) error {
	m := readMachine(bin)
	start := time.Now()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	w := io.MultiWriter(f, lineSink{})
	fmt.Fprintf(f, "# %s\n", m.oneLine())
	for _, gb := range benches(count) {
		n := count
		if gb.count > 0 {
			n = min(gb.count, count)
		}
		args := []string{"test", "-run", "^$", "-bench", gb.pattern, "-benchmem", "-count", fmt.Sprint(n)}
		if len(quickArgs) > 0 {
			args = append(args, "-benchtime", "1x")
		} else if gb.benchtime != "" {
			args = append(args, "-benchtime", gb.benchtime)
		}
		if err := step(w, "go", append(args, gb.pkg)...); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "ruleagent-bench-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	load, server := filepath.Join(tmp, "load"), filepath.Join(tmp, "server")
	// The drivers run from copies: a binary the Go linker has just written
	// maps about 20 MiB more of its file at start than the same bytes
	// copied (the page cache's state), which would blur the RSS figures.
	for _, b := range []struct{ path, pkg string }{{load, "./bench/load"}, {server, "./bench/server"}} {
		if err := step(io.Discard, "go", "build", "-o", b.path+".built", b.pkg); err != nil {
			return err
		}
		if err := proc.CopyBinary(b.path+".built", b.path); err != nil {
			return err
		}
	}
	for i := 0; i < runs; i++ {
		if err := step(w, load, append([]string{"-benchstat"}, loadArgs...)...); err != nil {
			return err
		}
		if err := step(w, server, append([]string{"-bin", bin}, quickArgs...)...); err != nil {
			return err
		}
	}
	m.loadAfter = loadAverage()
	m.took = time.Since(start)
	fmt.Fprintf(f, "# load average after: %s\n", m.loadAfter)
	if err := f.Sync(); err != nil {
		return err
	}
	results, err := parseFile(out)
	if err != nil {
		return err
	}
	printTable(os.Stdout, m, results)
	fmt.Printf("\nAll result lines: %s (benchstat format; make bench-save keeps them as the baseline, make bench-compare compares).\n", out)
	return nil
}

// quickArgs and loadArgs shrink the load drivers for -quick.
var quickArgs, loadArgs []string

// step runs one command, its output to w, and says so on stderr.
func step(w io.Writer, name string, args ...string) error {
	fmt.Fprintf(os.Stderr, "bench: %s %s\n", filepath.Base(name), strings.Join(args, " "))
	cmd := exec.Command(name, args...)
	cmd.Stdout = w
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// lineSink shows benchmark lines on stderr as they come, for progress.
type lineSink struct{}

func (lineSink) Write(p []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(p))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Benchmark") {
			fmt.Fprintln(os.Stderr, "  "+sc.Text())
		}
	}
	return len(p), nil
}

// machine describes where the figures were measured.
type machine struct {
	cpu, goVersion, loadBefore, loadAfter string
	cores                                 int
	binBytes                              int64
	took                                  time.Duration
}

func readMachine(bin string) machine {
	m := machine{cpu: "unknown CPU", cores: runtime.NumCPU(), goVersion: goVersion(), loadBefore: loadAverage()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	if fi, err := os.Stat(bin); err == nil {
		m.binBytes = fi.Size()
	}
	return m
}

func (m machine) oneLine() string {
	return fmt.Sprintf("%s, %d cores (nproc), %s, load average %s", m.cpu, m.cores, m.goVersion, m.loadBefore)
}

func goVersion() string {
	b, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return runtime.Version()
	}
	return strings.TrimSpace(string(b))
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
