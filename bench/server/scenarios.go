package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/bench/proc"
)

// run measures every figure and writes one benchstat line per figure.
func run(bin string, sz sizes, only string, out io.Writer) error {
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("the ruleagent binary: %w (make build)", err)
	}
	dir, err := os.MkdirTemp("", "ruleagent-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	for i := 1; i <= 3; i++ {
		note := strings.Repeat(fmt.Sprintf("hello from note %d\n", i), 20)
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("notes-%d.txt", i)), []byte(note), 0o644); err != nil {
			return err
		}
	}
	// The server runs from a copy: a binary the Go linker has just written
	// maps about 25 MiB more of its file into memory at start than the
	// same bytes copied (the page cache's state), which would make idle
	// RSS depend on how recently it was built.
	copied := filepath.Join(dir, "ruleagent")
	if err := proc.CopyBinary(bin, copied); err != nil {
		return err
	}
	bin = copied
	one, err := writeChains(filepath.Join(dir, "chains"), ws, 1)
	if err != nil {
		return err
	}
	llm, err := startSelf("-phase", "llm")
	if err != nil {
		return err
	}
	defer llm.stop()
	b := &bench{bin: bin, sz: sz, dir: dir, ws: ws, chains: one, llm: llm.URL, out: out}
	for _, f := range []struct {
		name string
		fn   func() error
	}{
		{"RunOverhead", b.overhead}, {"TokenLatency", b.tokenLatency}, {"Streams", b.streams},
		{"Throughput", b.throughput}, {"Startup", b.startup}, {"Fleet", b.fleet},
	} {
		if only != "" && !strings.Contains(f.name, only) {
			continue
		}
		if err := f.fn(); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}

type bench struct {
	bin, dir, ws, chains, llm string
	sz                        sizes
	out                       io.Writer
}

func (b *bench) emit(f figure) { fmt.Fprintln(b.out, f) }

func (b *bench) server(gomaxprocs int) (*process, error) {
	p, _, err := startServer(serverOptions{bin: b.bin, chains: b.chains, llmURL: b.llm, gomaxprocs: gomaxprocs})
	return p, err
}

// overhead: a 4-turn, 3-tool run through the server, minus the same four
// LLM requests made straight by a bare client, run by run.
func (b *bench) overhead() error {
	srv, err := b.server(0)
	if err != nil {
		return err
	}
	defer srv.stop()
	bodies := toolBodies()
	bare := func() (time.Duration, error) {
		start := time.Now()
		for _, body := range bodies {
			if _, err := bareRun(b.llm, body); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	endpoints := []struct {
		name string
		run  func(string, string, string) (stream, error)
	}{{"agui", aguiRun}, {"openai", openaiRun}}
	for i := 0; i < 5; i++ { // warm up connections and pools
		for _, ep := range endpoints {
			if _, err := ep.run(srv.URL, "bench", scenarioTools); err != nil {
				return err
			}
		}
	}
	extra := map[string][]time.Duration{}
	var bareTimes []time.Duration
	cpu := map[string]time.Duration{}
	for i := 0; i < b.sz.Sequential; i++ {
		tb, err := bare()
		if err != nil {
			return err
		}
		bareTimes = append(bareTimes, tb)
		for _, ep := range endpoints {
			c0 := cpuOf(srv.cmd.Process.Pid)
			s, err := ep.run(srv.URL, "bench", scenarioTools)
			if err != nil {
				return err
			}
			cpu[ep.name] += cpuOf(srv.cmd.Process.Pid) - c0
			if !strings.HasSuffix(s.text, toolsAnswer) {
				return fmt.Errorf("%s: answer %q, want %q", ep.name, s.text, toolsAnswer)
			}
			extra[ep.name] = append(extra[ep.name], s.took-tb)
		}
	}
	for _, ep := range endpoints {
		d := extra[ep.name]
		b.emit(figure{"ServerRunOverhead/" + ep.name, []value{
			{us(pct(d, 50)), "p50-us"}, {us(pct(d, 99)), "p99-us"},
			{us(pct(bareTimes, 50)), "bare-run-p50-us"},
			{us(cpu[ep.name]) / float64(b.sz.Sequential), "server-cpu-us/run"}}})
	}
	return nil
}

// tokenLatency: from the LLM writing a chunk to this client reading it,
// through each endpoint and straight from the LLM.
func (b *bench) tokenLatency() error {
	srv, err := b.server(0)
	if err != nil {
		return err
	}
	defer srv.stop()
	runs := map[string]func() (stream, error){
		"agui":   func() (stream, error) { return aguiRun(srv.URL, "bench", scenarioStamp) },
		"openai": func() (stream, error) { return openaiRun(srv.URL, "bench", scenarioStamp) },
		"bare": func() (stream, error) {
			return bareRun(b.llm, `{"model":"bench-model","stream":true,"messages":[{"role":"user","content":"`+scenarioStamp+`"}]}`)
		},
	}
	lags := map[string][]time.Duration{}
	for i := 0; i < b.sz.StampRuns+1; i++ {
		for _, name := range []string{"bare", "agui", "openai"} {
			s, err := runs[name]()
			if err != nil {
				return err
			}
			if len(s.lags) != 100 {
				return fmt.Errorf("%s: %d stamped chunks read, want 100", name, len(s.lags))
			}
			if i > 0 { // the first is a warm-up
				lags[name] = append(lags[name], s.lags...)
			}
		}
	}
	for _, name := range []string{"agui", "openai"} {
		b.emit(figure{"ServerTokenLatency/" + name, []value{
			{us(pct(lags[name], 50)), "p50-us"}, {us(pct(lags[name], 99)), "p99-us"},
			{us(pct(lags["bare"], 50)), "bare-p50-us"}, {us(pct(lags["bare"], 99)), "bare-p99-us"}}})
	}
	return nil
}

// streams: many concurrent AG-UI streams of the scenario; the
// server's peak RSS beside a bare proxy's.
func (b *bench) streams() error {
	srv, err := b.server(0)
	if err != nil {
		return err
	}
	agui := func() error {
		s, err := aguiRun(srv.URL, "bench", scenarioStream)
		if err == nil && s.text != streamAnswer {
			err = fmt.Errorf("answer %q", s.text)
		}
		return err
	}
	peak, idle, lost, err := concurrentPeak(srv, b.sz.Concurrent, agui)
	srv.stop()
	if err != nil {
		return err
	}
	proxy, err := startSelf("-phase", "proxy", "-llm", b.llm)
	if err != nil {
		return err
	}
	defer proxy.stop()
	body := `{"model":"bench-model","stream":true,"messages":[]}`
	bpeak, bidle, blost, err := concurrentPeak(proxy, b.sz.Concurrent, func() error {
		s, err := openaiStream(proxy.URL, body)
		if err == nil && s.text != streamAnswer {
			err = fmt.Errorf("bare proxy: answer %q", s.text)
		}
		return err
	})
	if err != nil {
		return err
	}
	n := float64(b.sz.Concurrent)
	b.emit(figure{fmt.Sprintf("ServerStreams/n=%d", b.sz.Concurrent), []value{
		{peak, "peak-MiB"}, {idle, "idle-MiB"}, {(peak - idle) * 1024 / n, "KiB/run"}, {float64(lost), "lost"},
		{bpeak, "bare-peak-MiB"}, {(bpeak - bidle) * 1024 / n, "bare-KiB/run"}, {float64(blost), "bare-lost"},
		{peak / bpeak, "x-bare"}}})
	if lost > 0 || blost > 0 {
		return fmt.Errorf("%d of %d streams lost or malformed (bare: %d)", lost, b.sz.Concurrent, blost)
	}
	return nil
}

// concurrentPeak warms p up with one run, then runs n at once and returns
// its peak RSS over that, its RSS before, and how many runs failed.
func concurrentPeak(p *process, n int, one func() error) (peak, idle float64, lost int, err error) {
	if err := one(); err != nil {
		return 0, 0, 0, err
	}
	idle, _ = p.rss()
	if err := p.resetPeak(); err != nil {
		return 0, 0, 0, fmt.Errorf("resetting the peak RSS: %w", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := one(); err != nil {
				mu.Lock()
				lost++
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	_, peak = p.rss()
	if first != nil {
		fmt.Fprintln(os.Stderr, "first failure:", first)
	}
	return peak, idle, lost, nil
}

// throughput: completed 4-turn runs per second with the server on 1 and 2
// cores, clients kept busy; the bare client's rate beside.
func (b *bench) throughput() error {
	bodies := toolBodies()
	bareRate, err := saturate(b.sz.Workers, b.sz.Saturation, func() error {
		for _, body := range bodies {
			if _, err := bareRun(b.llm, body); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, procs := range []int{1, 2} {
		srv, err := b.server(procs)
		if err != nil {
			return err
		}
		rate, err := saturate(b.sz.Workers, b.sz.Saturation, func() error {
			_, err := aguiRun(srv.URL, "bench", scenarioTools)
			return err
		})
		srv.stop()
		if err != nil {
			return err
		}
		b.emit(figure{fmt.Sprintf("ServerThroughput/gomaxprocs=%d", procs), []value{{rate, "runs/s"}, {bareRate, "bare-runs/s"}}})
	}
	return nil
}

// saturate runs one in a loop on workers goroutines for d (after a warm-up)
// and returns completed runs per second.
func saturate(workers int, d time.Duration, one func() error) (float64, error) {
	for i := 0; i < workers; i++ {
		if err := one(); err != nil {
			return 0, err
		}
	}
	var mu sync.Mutex
	var done int
	var first error
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				err := one()
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if err == nil {
					done++
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(done) / time.Since(start).Seconds(), first
}
