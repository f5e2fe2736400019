// Command server is the load client of `make bench` that measures
// ruleagent through its server: `ruleagent serve` (the built binary), the
// scripted LLM and this client run as three processes on loopback.
//
//	go run ./bench/server -bin bin/ruleagent [-quick]
//
// It prints one benchstat line per figure (Benchmark<name> 1 <value> <unit>
// ...), each with the bare baseline beside it: a bare Go HTTP client talking
// to the scripted LLM directly, or for server memory a bare Go proxy
// relaying the LLM's stream. Every stream read is checked: complete and
// well-formed (AG-UI: RUN_STARTED first, RUN_FINISHED last, the event rules
// of internal/aguicheck; OpenAI: the answer, then [DONE]); a lost or broken
// stream fails the command.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/bench/proc"
)

// sizes are the scenario sizes; -quick makes them small (the smoke test).
type sizes struct {
	Sequential  int // runs for the overhead figures
	StampRuns   int // runs of 100 stamped chunks for token latency
	Concurrent  int // concurrent AG-UI streams
	Saturation  time.Duration
	Workers     int // concurrent clients at saturation
	StartChains int
}

func main() {
	phase := flag.String("phase", "", "internal: llm or proxy")
	llmURL := flag.String("llm", "", "internal: the scripted LLM's URL (proxy)")
	bin := flag.String("bin", "bin/ruleagent", "the ruleagent binary")
	quick := flag.Bool("quick", false, "small sizes (a smoke test, not figures)")
	only := flag.String("only", "", "run only the figures whose names contain this")
	flag.Parse()
	proc.RaiseFileLimit()
	var err error
	switch *phase {
	case "llm":
		err = serveLLM()
	case "proxy":
		err = serveProxy(*llmURL)
	case "":
		sz := sizes{Sequential: 200, StampRuns: 5, Concurrent: 1000, Saturation: 5 * time.Second, Workers: 16, StartChains: 100}
		if *quick {
			sz = sizes{Sequential: 3, StampRuns: 1, Concurrent: 20, Saturation: 300 * time.Millisecond, Workers: 2, StartChains: 3}
		}
		err = run(*bin, sz, *only, os.Stdout)
	default:
		err = fmt.Errorf("unknown phase %q", *phase)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/server:", err)
		os.Exit(1)
	}
}

// figure is one benchstat line.
type figure struct {
	name   string
	values []value
}

type value struct {
	v    float64
	unit string
}

func (f figure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Benchmark%s 1", f.name)
	for _, v := range f.values {
		fmt.Fprintf(&b, " %.4g %s", v.v, v.unit)
	}
	return b.String()
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
