package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// results are every value read, by benchmark name (without its -N
// GOMAXPROCS suffix) and unit.
type results map[string]map[string][]float64

var procsSuffix = regexp.MustCompile(`-\d+$`)

func parseFile(path string) (results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := results{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := procsSuffix.ReplaceAllString(strings.TrimPrefix(fields[0], "Benchmark"), "")
		if r[name] == nil {
			r[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			r[name][fields[i+1]] = append(r[name][fields[i+1]], v)
		}
	}
	return r, sc.Err()
}

// stat is a median with its spread.
type stat struct {
	med, lo, hi float64
	n           int
}

func (r results) stat(name, unit string) (stat, bool) {
	v := r[name][unit]
	if len(v) == 0 {
		return stat{}, false
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{med: med, lo: s[0], hi: s[len(s)-1], n: len(s)}, true
}

// row is one line of the table: a figure, its bare baseline, its target.
type row struct {
	what       string
	name, unit string
	// scale turns the unit into the one shown (e.g. ns to µs).
	scale     float64
	shown     string
	bare      string // benchmark name of the baseline ("" = same)
	minus     string // a benchmark (same unit) whose median is taken off: the figure is what name adds
	bareUnit  string
	target    string
	met       func(float64) bool
	decimals  int
	sectioned string
}

func rows() []row {
	le := func(x float64) func(float64) bool { return func(v float64) bool { return v <= x } }
	lt := func(x float64) func(float64) bool { return func(v float64) bool { return v < x } }
	return []row{
		{sectioned: "Memory at 1,000 concurrent streaming runs (1 turn, 40 chunks 50 ms apart; LLM in another process)"},
		{what: "peak RSS, ai/agent node in process", name: "LoadStreams/n=1000/turns=1", unit: "peak-MiB", shown: "MiB", bareUnit: "bare-peak-MiB", decimals: 1},
		{what: "  ratio to a bare Go HTTP client", name: "LoadStreams/n=1000/turns=1", unit: "x-bare", shown: "×", target: "≤ 1.25×", met: le(1.25), decimals: 2},
		{what: "  anonymous part of the peak (no binary pages)", name: "LoadStreams/n=1000/turns=1", unit: "anon-MiB", shown: "MiB", bareUnit: "bare-anon-MiB", decimals: 1},
		{what: "  its ratio", name: "LoadStreams/n=1000/turns=1", unit: "x-bare-anon", shown: "×", decimals: 2},
		{what: "  runs lost", name: "LoadStreams/n=1000/turns=1", unit: "lost", shown: "runs", target: "0", met: le(0)},
		{what: "peak RSS, ruleagent serve, 1,000 AG-UI streams", name: "ServerStreams/n=1000", unit: "peak-MiB", shown: "MiB", bareUnit: "bare-peak-MiB", decimals: 1},
		{what: "  per run above idle", name: "ServerStreams/n=1000", unit: "KiB/run", shown: "KiB", bareUnit: "bare-KiB/run", decimals: 1},
		{what: "  server idle before", name: "ServerStreams/n=1000", unit: "idle-MiB", shown: "MiB", decimals: 1},
		{what: "  streams lost or malformed", name: "ServerStreams/n=1000", unit: "lost", shown: "streams", target: "0", met: le(0)},

		{sectioned: "Through the server (ruleagent serve, scripted LLM and client: three processes on loopback)"},
		{what: "overhead per 4-turn 3-tool run, AG-UI, p50", name: "ServerRunOverhead/agui", unit: "p50-us", scale: 1e-3, shown: "ms", bareUnit: "bare-run-p50-us", decimals: 2},
		{what: "  p99", name: "ServerRunOverhead/agui", unit: "p99-us", scale: 1e-3, shown: "ms", decimals: 2},
		{what: "  server CPU per run", name: "ServerRunOverhead/agui", unit: "server-cpu-us/run", scale: 1e-3, shown: "ms", decimals: 2},
		{what: "overhead per 4-turn 3-tool run, OpenAI, p50", name: "ServerRunOverhead/openai", unit: "p50-us", scale: 1e-3, shown: "ms", bareUnit: "bare-run-p50-us", decimals: 2},
		{what: "  p99", name: "ServerRunOverhead/openai", unit: "p99-us", scale: 1e-3, shown: "ms", decimals: 2},
		{what: "  server CPU per run", name: "ServerRunOverhead/openai", unit: "server-cpu-us/run", scale: 1e-3, shown: "ms", decimals: 2},
		{what: "token pass-through, AG-UI, p50", name: "ServerTokenLatency/agui", unit: "p50-us", scale: 1e-3, shown: "ms", bareUnit: "bare-p50-us", target: "< 2 ms", met: lt(2), decimals: 2},
		{what: "  p99", name: "ServerTokenLatency/agui", unit: "p99-us", scale: 1e-3, shown: "ms", bareUnit: "bare-p99-us", target: "< 2 ms", met: lt(2), decimals: 2},
		{what: "token pass-through, OpenAI, p50", name: "ServerTokenLatency/openai", unit: "p50-us", scale: 1e-3, shown: "ms", bareUnit: "bare-p50-us", target: "< 2 ms", met: lt(2), decimals: 2},
		{what: "  p99", name: "ServerTokenLatency/openai", unit: "p99-us", scale: 1e-3, shown: "ms", bareUnit: "bare-p99-us", target: "< 2 ms", met: lt(2), decimals: 2},
		{what: "throughput at saturation, GOMAXPROCS=1", name: "ServerThroughput/gomaxprocs=1", unit: "runs/s", shown: "runs/s", bareUnit: "bare-runs/s"},
		{what: "throughput at saturation, GOMAXPROCS=2", name: "ServerThroughput/gomaxprocs=2", unit: "runs/s", shown: "runs/s", bareUnit: "bare-runs/s"},
		{what: "start-up to ready, 100 chains", name: "ServerStartup/chains=100", unit: "ready-ms", shown: "ms", bare: "ServerStartup/chains=1", bareUnit: "ready-ms", target: "< 2000 ms", met: lt(2000)},
		{what: "  load cost per chain", name: "ServerStartup/chains=100", unit: "load-ms/chain", shown: "ms", decimals: 2},
		{what: "  idle memory per chain", name: "ServerStartup/chains=100", unit: "idle-KiB/chain", shown: "KiB"},
		{what: "shutdown, 100 chains", name: "ServerStartup/chains=100", unit: "shutdown-ms", shown: "ms", bare: "ServerStartup/chains=1", bareUnit: "shutdown-ms"},
		{what: "  shutdown cost per chain", name: "ServerStartup/chains=100", unit: "shutdown-ms/chain", shown: "ms", decimals: 2},
		{what: "idle RSS, 1 chain", name: "ServerStartup/chains=1", unit: "idle-MiB", shown: "MiB", decimals: 1},

		{sectioned: "A fleet (1 to 3 serve replicas on one redis-server, runs sent round robin; 4-turn 3-tool runs with a thread session)"},
		{what: "throughput at saturation, 1 replica", name: "FleetThroughput/replicas=1", unit: "runs/s", shown: "runs/s"},
		{what: "  Redis commands per run", name: "FleetThroughput/replicas=1", unit: "redis-cmds/run", shown: "commands", decimals: 1},
		{what: "  Redis CPU per run", name: "FleetThroughput/replicas=1", unit: "redis-cpu-us/run", shown: "µs"},
		{what: "throughput at saturation, 2 replicas", name: "FleetThroughput/replicas=2", unit: "runs/s", shown: "runs/s"},
		{what: "  Redis commands per run", name: "FleetThroughput/replicas=2", unit: "redis-cmds/run", shown: "commands", decimals: 1},
		{what: "  Redis CPU per run", name: "FleetThroughput/replicas=2", unit: "redis-cpu-us/run", shown: "µs"},
		{what: "throughput at saturation, 3 replicas", name: "FleetThroughput/replicas=3", unit: "runs/s", shown: "runs/s"},
		{what: "  Redis commands per run", name: "FleetThroughput/replicas=3", unit: "redis-cmds/run", shown: "commands", decimals: 1},
		{what: "  Redis CPU per run", name: "FleetThroughput/replicas=3", unit: "redis-cpu-us/run", shown: "µs"},

		{sectioned: "In process (go test -bench, -benchmem)"},
		{what: "tool wrapper per call (validation, metrics aspect, events, scrubber)", name: "InvokeFull/metrics", unit: "ns/op", scale: 1e-3, shown: "µs", target: "≤ 3 µs", met: le(3), decimals: 2},
		{what: "  allocations", name: "InvokeFull/metrics", unit: "allocs/op", shown: "allocs", target: "≤ 15", met: le(15)},
		{what: "  with a logging aspect (slog text records)", name: "InvokeFull/metrics+logging", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 2},
		{what: "tracing off: every check of a 4-turn, 3-tool run with two node steps", name: "Off", unit: "ns/op", shown: "ns", target: "not measurable"},
		{what: "  allocations", name: "Off", unit: "allocs/op", shown: "allocs", target: "0", met: le(0)},
		{what: "tracing on: added per LLM call (chat span, first chunk, usage)", name: "ChatSpan/on", minus: "ChatSpan/off", unit: "ns/op", scale: 1e-3, shown: "µs", target: "< 50 µs", met: lt(50), decimals: 2},
		{what: "tracing on: added per tool call (execute_tool span)", name: "ToolSpan/on", minus: "ToolSpan/off", unit: "ns/op", scale: 1e-3, shown: "µs", target: "< 50 µs", met: lt(50), decimals: 2},
		{what: "  with content captured (arguments, result, scrubbed)", name: "ToolSpan/on+content", minus: "ToolSpan/off", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 2},
		{what: "4-turn 3-tool run (replayed model), tracing off", name: "TracedRun/off", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "  tracing on (8 spans)", name: "TracedRun/on", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "engine per LLM turn (in-process replayed model)", name: "EngineTurn", unit: "ns/turn", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "  allocations per 4-turn run", name: "EngineTurn", unit: "allocs/op", shown: "allocs"},
		{what: "CPU per 4-turn 3-tool run (scripted LLM in a child)", name: "Run4Turns3Tools", unit: "cpu-us/op", scale: 1e-3, shown: "ms", bare: "BareClient4Turns", bareUnit: "cpu-us/op", decimals: 2},
		{what: "  memory per run", name: "Run4Turns3Tools", unit: "B/op", scale: 1.0 / 1024, shown: "KiB", bare: "BareClient4Turns", bareUnit: "B/op", decimals: 1},
		{what: "first-token delay added (chunks 50 ms apart)", name: "FirstTokenDelay", unit: "added-us/op", scale: 1e-3, shown: "ms", target: "≤ 1 ms", met: le(1), decimals: 2},
		{what: "AG-UI event as an SSE frame, the run's cost (encode, queue)", name: "Event", unit: "ns/op", shown: "ns"},
		{what: "  allocations", name: "Event", unit: "allocs/op", shown: "allocs"},
		{what: "  the whole stream per event (encode, queue, write, flush)", name: "Stream", unit: "ns/op", shown: "ns"},
		{what: "AG-UI event JSON only", name: "AppendJSON", unit: "ns/op", shown: "ns"},
		{what: "OpenAI chat.completion.chunk per content delta", name: "ChunkContent", unit: "ns/op", shown: "ns"},
		{what: "  allocations", name: "ChunkContent", unit: "allocs/op", shown: "allocs"},
		{what: "shell policy check, simple command", name: "PolicyCheck/simple", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "  pipeline of three", name: "PolicyCheck/pipeline", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "  cd, redirects, two commands", name: "PolicyCheck/compound", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "kernel sandbox cost per bash command", name: "SandboxCost", unit: "added-ms", shown: "ms", target: "≤ 2 ms", met: le(2), decimals: 2},
		{what: "  first command of a run, beyond the next (its ruleset and thread)", name: "SandboxRunCost", unit: "first-extra-ms", shown: "ms", decimals: 2},
		{what: "network check per connection (public address)", name: "CheckAddr/93.184.216.34", unit: "ns/op", shown: "ns"},
		{what: "  dialer Control (parse and check)", name: "Control", unit: "ns/op", shown: "ns"},
		{what: "path check per file access (workspace Resolve)", name: "Resolve/relative", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "session load per turn, memory store", name: "SessionLoad/memory", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "  bolt store", name: "SessionLoad/bolt", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "session save per turn, memory store", name: "SessionSave/memory", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "  bolt store (one synced transaction)", name: "SessionSave/bolt", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "whole session turn (lease … release), memory", name: "SessionTurn/memory", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "  bolt", name: "SessionTurn/bolt", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "usage ledger per 4-turn 3-tool run: the run's part (4 calls priced and queued, 3 tool calls)", name: "LedgerRun/path", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "  allocations", name: "LedgerRun/path", unit: "allocs/op", shown: "allocs"},
		{what: "  with daily budgets checked before each LLM call (bbolt)", name: "LedgerRun/path+budgets", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "  written: one synced bbolt batch per run (the worst case)", name: "LedgerRun/written/bolt", unit: "ns/op", scale: 1e-6, shown: "ms", decimals: 2},
		{what: "scrubbing 64 KiB of code with no secret", name: "Scrub/64KiB_clean_code", unit: "MB/s", shown: "MB/s"},
		{what: "scrubbing 16 KiB holding six kinds of secret", name: "Scrub/secrets", unit: "MB/s", shown: "MB/s"},
		{what: "recording a 200-chunk LLM answer on the run's path", name: "LLMBodyRecorded/recorded", unit: "ns/op", scale: 1e-3, shown: "µs", bare: "LLMBodyRecorded/bare", decimals: 1},
		{what: "  allocations", name: "LLMBodyRecorded/recorded", unit: "allocs/op", shown: "allocs"},
		{what: "scrubbing its record after the run (answer and events, across chunks), no secret", name: "RecordScrub/clean", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "  two secrets split across chunks", name: "RecordScrub/split_secret", unit: "ns/op", scale: 1e-3, shown: "µs", decimals: 1},
		{what: "  allocations", name: "RecordScrub/split_secret", unit: "allocs/op", shown: "allocs"},
	}
}

func printTable(w io.Writer, m machine, r results) {
	fmt.Fprintf(w, "\nruleagent performance — %s\n", m.oneLine())
	fmt.Fprintf(w, "load average after: %s; took %s; binary %s: %.1f MB\n", m.loadAfter, m.took.Round(1e9), "bin/ruleagent", float64(m.binBytes)/1e6)
	fmt.Fprintln(w, "Each figure: median [min–max] over the runs (n). Bare: the same work by a bare Go HTTP client (or proxy).")
	tw := newTabular(w)
	for _, rw := range rows() {
		if rw.sectioned != "" {
			tw.section(rw.sectioned)
			continue
		}
		s, ok := r.stat(rw.name, rw.unit)
		if ok && rw.minus != "" {
			var m stat
			if m, ok = r.stat(rw.minus, rw.unit); ok {
				s = stat{med: s.med - m.med, lo: s.lo - m.hi, hi: s.hi - m.lo, n: s.n}
			}
		}
		if !ok {
			tw.add(rw.what, "not measured", "", "", "")
			continue
		}
		scale := rw.scale
		if scale == 0 {
			scale = 1
		}
		val := fmt.Sprintf("%s %s [%s–%s] (%d)", num(s.med*scale, rw.decimals), rw.shown, num(s.lo*scale, rw.decimals), num(s.hi*scale, rw.decimals), s.n)
		bare := ""
		if rw.bareUnit != "" {
			name := rw.bare
			if name == "" {
				name = rw.name
			}
			if b, ok := r.stat(name, rw.bareUnit); ok {
				bare = fmt.Sprintf("%s %s", num(b.med*scale, rw.decimals), rw.shown)
			}
		}
		verdict := ""
		if rw.met != nil {
			verdict = "missed"
			if rw.met(s.med * scale) {
				verdict = "met"
			}
		}
		tw.add(rw.what, val, bare, rw.target, verdict)
	}
	tw.flush()
}

func num(v float64, decimals int) string { return strconv.FormatFloat(v, 'f', decimals, 64) }

// tabular lays the table out in aligned columns.
type tabular struct {
	w    io.Writer
	rows [][]string
}

func newTabular(w io.Writer) *tabular { return &tabular{w: w} }

func (t *tabular) section(title string) { t.rows = append(t.rows, []string{"\x00" + title}) }

func (t *tabular) add(cols ...string) { t.rows = append(t.rows, cols) }

func (t *tabular) flush() {
	header := []string{"figure", "ruleagent", "bare", "target", ""}
	width := make([]int, len(header))
	for _, r := range append([][]string{header}, t.rows...) {
		if strings.HasPrefix(r[0], "\x00") {
			continue
		}
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(r []string) {
		var b strings.Builder
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-len([]rune(c))+2))
			}
		}
		fmt.Fprintln(t.w, strings.TrimRight(b.String(), " "))
	}
	line(header)
	for _, r := range t.rows {
		if strings.HasPrefix(r[0], "\x00") {
			fmt.Fprintf(t.w, "\n%s\n", r[0][1:])
			continue
		}
		line(r)
	}
}
