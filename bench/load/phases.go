package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/tools"
)

// scenario is the conversation every run has.
type scenario struct {
	// Turns is 1 (a streamed answer of Chunks chunks) or 4 (three turns
	// that each call a tool, then the answer).
	Turns  int
	Chunks int
	Delay  time.Duration
}

// answer is the final text of every run: Chunks content chunks of 4 runes.
func (sc scenario) answer() string { return strings.Repeat("word", sc.Chunks) }

// script is the scripted LLM's side of the scenario.
func (sc scenario) script() llmtest.Script {
	final := llmtest.Response{Text: sc.answer(), ChunkSize: 4, ChunkDelay: sc.Delay}
	if sc.Turns <= 1 {
		return llmtest.Always(final)
	}
	pre := "Let me work this out step by step."
	turn := func(args string) llmtest.Response {
		return llmtest.Response{Text: pre, ToolCalls: []llmtest.ToolCall{llmtest.Call("bench_add", args)}, ChunkSize: 4, ChunkDelay: sc.Delay}
	}
	return llmtest.Sequence(turn(`{"a":1,"b":2}`), turn(`{"a":3,"b":4}`), turn(`{"a":5,"b":6}`), final)
}

func serve(sc scenario) error { return llmtest.ServeProcess(sc.script(), os.Stdin, os.Stdout) }

func init() {
	tools.MustRegister(tools.Definition{Name: "bench_add", Description: "Adds two numbers (load driver).",
		New: func(tools.BuildContext, json.RawMessage) (tools.Tool, error) {
			return tools.Func{Spec: tools.Info{Name: "bench_add", Description: "Adds two numbers.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
				Fn: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
					var v struct{ A, B float64 }
					if err := json.Unmarshal(args, &v); err != nil {
						return tools.Result{}, err
					}
					return tools.TextResult(strconv.FormatFloat(v.A+v.B, 'f', -1, 64)), nil
				}}, nil
		}})
}

// sseSink encodes each event as an SSE frame, as the server's AG-UI
// encoder does, and counts terminal events.
type sseSink struct {
	buf       []byte
	terminals int
}

func (s *sseSink) Emit(e events.Event) {
	s.buf = append(s.buf[:0], "data: "...)
	s.buf = append(e.AppendJSON(s.buf), '\n', '\n')
	if e.Type.Terminal() {
		s.terminals++
	}
}

// agentRun is one run's outcome.
type agentRun struct {
	sink *sseSink
	got  string
	err  error
}

func runAgent(url string, runs int, sc scenario) (report, error) {
	if os.Getenv("LOAD_HEAPPROFILE") != "" {
		runtime.MemProfileRate = 1
	}
	dsl, _ := json.Marshal(map[string]any{
		"ruleChain": map[string]any{"id": "load", "name": "Load"},
		"metadata": map[string]any{"nodes": []any{map[string]any{"id": "agent", "type": components.AgentType, "configuration": map[string]any{
			"url": url, "model": "load-model", "systemPrompt": "You add numbers.",
			"tools": []any{map[string]any{"type": "builtin", "name": "bench_add"}}}}}},
	})
	pool := rulego.NewRuleGo()
	e, err := pool.New("load", dsl, rulego.WithConfig(rulego.NewConfig()))
	if err != nil {
		return report{}, err
	}
	defer pool.Stop()
	var direct *agent.Agent
	if os.Getenv("LOAD_DIRECT") != "" {
		client, _ := agent.NewClient(agent.LLMConfig{Endpoints: []agent.Endpoint{{URL: url, Model: "load-model"}}})
		set, _ := tools.Build(context.Background(), []tools.Spec{{Type: "builtin", Name: "bench_add"}}, tools.BuildEnv{})
		direct, _ = agent.New(agent.Config{LLM: client, Tools: set, ParallelToolCalls: true})
	}
	var ok atomic.Int64
	var firstErr atomic.Value
	anon := sampleAnon()
	start, cpu0 := time.Now(), cpuSeconds()
	var wg sync.WaitGroup
	for i := 0; i < runs; i++ {
		wg.Add(1)
		r := &agentRun{sink: &sseSink{}}
		check := func() {
			defer wg.Done()
			switch {
			case r.err != nil:
				firstErr.CompareAndSwap(nil, r.err.Error())
			case r.got != sc.answer() || r.sink.terminals != 1:
				firstErr.CompareAndSwap(nil, fmt.Sprintf("answer %q, %d terminal events", r.got, r.sink.terminals))
			default:
				ok.Add(1)
			}
		}
		if direct != nil {
			go func() {
				out, err := direct.Run(context.Background(), agent.Input{Messages: []events.Message{{Role: events.RoleUser, Content: "Add 1+2, 3+4 and 5+6."}}, Stream: true}, r.sink)
				if err == nil {
					r.got = out.Content
				}
				r.err = err
				check()
			}()
			continue
		}
		// As the server drives a run: no goroutine waits for it, and the
		// agent node runs in the caller's own context.
		msg := types.NewMsg(0, "CHAT", types.TEXT, types.NewMetadata(), "Add 1+2, 3+4 and 5+6.")
		e.OnMsg(msg, types.WithContext(components.WithRunContext(events.WithSink(context.Background(), r.sink))),
			types.WithOnEnd(func(_ types.RuleContext, m types.RuleMsg, err error, rel string) {
				if rel != types.Stream {
					r.got, r.err = m.GetData(), err
				}
			}),
			types.WithOnAllNodeCompleted(check))
	}
	stopSampling := sampleMem()
	defer stopSampling()
	if path := os.Getenv("LOAD_HEAPPROFILE"); path != "" {
		// Profile the heap while the runs are in flight: a profile shows
		// the heap as of the last GC.
		time.Sleep(time.Second)
		runtime.GC()
		if f, err := os.Create(path); err == nil {
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
		if g, err := os.Create(path + ".goroutines"); err == nil {
			_ = pprof.Lookup("goroutine").WriteTo(g, 1)
			g.Close()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Fprintf(os.Stderr, "heapInuse=%dMiB heapSys=%dMiB stackInuse=%dMiB sys=%dMiB goroutines=%d\n",
			ms.HeapInuse>>20, ms.HeapSys>>20, ms.StackInuse>>20, ms.Sys>>20, runtime.NumGoroutine())
	}
	wg.Wait()
	return finish("agent", runs, int(ok.Load()), start, cpu0, firstErr, anon.peak()), nil
}

func runBare(url string, runs int, sc scenario) (report, error) {
	// The same requests the agent makes, recorded from one run.
	rec, err := llmtest.Start(scenario{Turns: sc.Turns, Chunks: sc.Chunks}.script())
	if err != nil {
		return report{}, err
	}
	if r, err := runAgent(rec.URL, 1, sc); err != nil || r.OK != 1 {
		return report{}, fmt.Errorf("recording the requests: %v %+v", err, r)
	}
	var bodies [][]byte
	for _, r := range rec.Requests() {
		bodies = append(bodies, r.Body)
	}
	rec.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	var ok atomic.Int64
	var firstErr atomic.Value
	anon := sampleAnon()
	start, cpu0 := time.Now(), cpuSeconds()
	var wg sync.WaitGroup
	for i := 0; i < runs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, b := range bodies {
				resp, err := client.Post(url+"/chat/completions", "application/json", bytes.NewReader(b))
				if err == nil {
					err = drain(resp.Body)
					resp.Body.Close()
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err.Error())
					return
				}
			}
			ok.Add(1)
		}()
	}
	stopSampling := sampleMem()
	wg.Wait()
	stopSampling()
	return finish("bare", runs, int(ok.Load()), start, cpu0, firstErr, anon.peak()), nil
}

func finish(phase string, runs, ok int, start time.Time, cpu0 float64, firstErr atomic.Value, anon float64) report {
	r := report{Phase: phase, Runs: runs, OK: ok, Lost: runs - ok, PeakRSS: peakRSS(), PeakAnon: anon,
		Seconds: time.Since(start).Seconds(), CPUSecs: cpuSeconds() - cpu0}
	if v, _ := firstErr.Load().(string); v != "" {
		r.FirstErr = strings.TrimSpace(v)
	}
	return r
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// sampleMem prints the largest heap and stack figures seen while running
// (diagnostics, enabled with LOAD_MEMSTATS=1).
func sampleMem() func() {
	if os.Getenv("LOAD_MEMSTATS") == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		var maxHeap, maxStack, maxSys uint64
		var at time.Duration
		start := time.Now()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprintf(os.Stderr, "max heapSys=%dMiB stackSys=%dMiB sys=%dMiB (sys peak at %v) rss=%.0fMiB\n", maxHeap>>20, maxStack>>20, maxSys>>20, at, peakRSS())
				return
			case <-t.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				maxHeap = max(maxHeap, ms.HeapSys)
				maxStack = max(maxStack, ms.StackSys)
				if ms.Sys > maxSys {
					maxSys, at = ms.Sys, time.Since(start)
				}
			}
		}
	}()
	return func() { close(done); time.Sleep(30 * time.Millisecond) }
}
