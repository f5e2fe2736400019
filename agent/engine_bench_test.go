package agent

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/tools"
)

// replayModel is an in-process scripted model: it answers each request with
// the stream recorded for its turn (the number of assistant messages in the
// request), with no network and no server, so a benchmark pays for the
// engine alone.
type replayModel struct{ turns [][]byte }

func (r *replayModel) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	req.Body.Close()
	turn := min(bytes.Count(body, []byte(`"role":"assistant"`)), len(r.turns)-1)
	return &http.Response{StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body:   io.NopCloser(bytes.NewReader(r.turns[turn])), ContentLength: -1, Request: req}, nil
}

// recorder keeps each answer's raw stream.
type recorder struct{ turns [][]byte }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.turns = append(r.turns, b)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, err
}

// BenchmarkEngineTurn is the engine's own cost per LLM turn: a 4-turn,
// 3-tool streaming run against an in-process replay of the scripted model,
// with every event encoded as an SSE frame. ns/turn and allocs/turn are the
// run's figures divided by its four turns.
func BenchmarkEngineTurn(b *testing.B) {
	srv := llmtest.NewServer(b, benchScript())
	rec := &recorder{}
	if _, err := engineWith(b, srv.URL, rec).Run(context.Background(), Input{Messages: benchInput, Stream: true}, &sseSink{}); err != nil || len(rec.turns) != 4 {
		b.Fatal(err, len(rec.turns))
	}
	a := engineWith(b, "http://replay.invalid/v1", &replayModel{turns: rec.turns})
	sink := &sseSink{}
	b.ReportAllocs()
	for b.Loop() {
		out, err := a.Run(context.Background(), Input{Messages: benchInput, Stream: true}, sink)
		if err != nil || out.Steps != 4 {
			b.Fatal(err, out)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/4, "ns/turn")
}

// engineWith is the benchmarks' agent: the add tool and an LLM at url,
// reached through rt (nil: the client's own transport).
func engineWith(b *testing.B, url string, rt http.RoundTripper) *Agent {
	cfg := LLMConfig{Endpoints: []Endpoint{{URL: url, Key: "sk-bench", Model: "bench"}}}
	if rt != nil {
		cfg.HTTPClient = &http.Client{Transport: rt}
	}
	client, err := NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var calls callCounter
	set, err := tools.Build(context.Background(), []tools.Spec{{Type: tools.TypeBuiltin, Name: "add"}}, tools.BuildEnv{Registry: testRegistry(b, &calls)})
	if err != nil {
		b.Fatal(err)
	}
	a, err := New(Config{LLM: client, Tools: set, ParallelToolCalls: true})
	if err != nil {
		b.Fatal(err)
	}
	return a
}
