package agent

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// benchScript is a 4-turn run with 3 tool calls, every turn streamed in
// small chunks, as a model with a short preamble per turn would answer.
func benchScript() llmtest.Script {
	pre := "Let me work this out step by step here."
	return llmtest.Sequence(
		llmtest.Response{Text: pre, ToolCalls: []llmtest.ToolCall{llmtest.Call("add", `{"a":1,"b":2}`)}, ChunkSize: 4},
		llmtest.Response{Text: pre, ToolCalls: []llmtest.ToolCall{llmtest.Call("add", `{"a":3,"b":4}`)}, ChunkSize: 4},
		llmtest.Response{Text: pre, ToolCalls: []llmtest.ToolCall{llmtest.Call("add", `{"a":5,"b":6}`)}, ChunkSize: 4},
		llmtest.Response{Text: strings.Repeat("The sums are 3, 7 and 11, as computed. ", 5), ChunkSize: 4},
	)
}

// sseSink encodes every event as an SSE frame into a buffer, as the
// server's AG-UI encoder does, so the benchmark pays for encoding.
type sseSink struct{ buf []byte }

func (s *sseSink) Emit(e events.Event) {
	s.buf = append(s.buf[:0], "data: "...)
	s.buf = append(e.AppendJSON(s.buf), '\n', '\n')
}

func benchAgent(b *testing.B, url string) *Agent { return engineWith(b, url, nil) }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var benchInput = []events.Message{{Role: events.RoleUser, Content: "Add 1+2, 3+4 and 5+6."}}

// BenchmarkRun4Turns3Tools is a whole streaming run against the scripted
// server (in a child process) at zero delay. cpu-us/op is this process's
// CPU per run; BenchmarkBareClient4Turns is the baseline.
func BenchmarkRun4Turns3Tools(b *testing.B) {
	a := benchAgent(b, benchServer(b))
	sink := &sseSink{}
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		out, err := a.Run(context.Background(), Input{Messages: benchInput, Stream: true}, sink)
		if err != nil || out.Steps != 4 {
			b.Fatal(err, out)
		}
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-us/op")
}

// BenchmarkBareClient4Turns makes the same four requests with a plain HTTP
// client and reads the answers to the end, parsing nothing: the baseline
// ruleagent's overhead is measured against.
func BenchmarkBareClient4Turns(b *testing.B) {
	// Record the engine's four request bodies on a local server first.
	rec := llmtest.NewServer(b, benchScript())
	if _, err := benchAgent(b, rec.URL).Run(context.Background(), Input{Messages: benchInput, Stream: true}, events.Discard); err != nil {
		b.Fatal(err)
	}
	var bodies [][]byte
	for _, r := range rec.Requests() {
		bodies = append(bodies, r.Body)
	}
	url := benchServer(b)
	client := &http.Client{}
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		for _, body := range bodies {
			resp, err := client.Post(url+"/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-us/op")
}

// BenchmarkFirstTokenDelay measures how long after a chunk reaches the
// client process its event reaches the Sink: a delta is released as soon
// as it is read, never held back to look ahead. Chunks are 50 ms apart.
func BenchmarkFirstTokenDelay(b *testing.B) {
	srv := llmtest.NewServer(b, llmtest.Always(llmtest.Response{Text: "one two three four", ChunkSize: 4, ChunkDelay: 50 * time.Millisecond}))
	client, _ := NewClient(LLMConfig{Endpoints: []Endpoint{{URL: srv.URL, Model: "m"}}})
	a, _ := New(Config{LLM: client})
	var added time.Duration
	b.ResetTimer()
	for b.Loop() {
		// Time the bare stream's first content line, then the engine's first
		// TEXT_MESSAGE_CONTENT, each from its request start.
		bare := bareFirstContent(b, srv.URL)
		var first time.Duration
		start := time.Now()
		sink := events.SinkFunc(func(e events.Event) {
			if e.Type == events.TextMessageContent && first == 0 {
				first = time.Since(start)
			}
		})
		if _, err := a.Run(context.Background(), Input{Messages: benchInput, Stream: true}, sink); err != nil {
			b.Fatal(err)
		}
		added += first - bare
	}
	b.ReportMetric(float64(added.Microseconds())/float64(b.N), "added-us/op")
}

func bareFirstContent(b *testing.B, url string) time.Duration {
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`
	start := time.Now()
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var first time.Duration
	for sc.Scan() {
		if first == 0 && strings.Contains(sc.Text(), `"content":"`) && !strings.Contains(sc.Text(), `"content":""`) {
			first = time.Since(start)
		}
	}
	return first
}
