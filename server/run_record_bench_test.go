package server

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/state/runrecord"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// chunkBody gives an SSE body one chunk a Read, as a streaming LLM does.
type chunkBody struct {
	chunks []string
	i      int
}

func (c *chunkBody) Read(p []byte) (int, error) {
	if c.i == len(c.chunks) {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[c.i])
	c.i++
	return n, nil
}

func (c *chunkBody) Close() error { return nil }

func sseChunks(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"word "}}]}` + "\n\n"
	}
	return out
}

// BenchmarkLLMBodyRecorded is the recording's cost on the chunk path: an
// LLM answer of 200 streamed chunks read through the recorder, against
// the same answer read bare. Recording copies each chunk once (into one
// growing buffer, whose appends are the allocations) and scrubs the body
// once at its end.
func BenchmarkLLMBodyRecorded(b *testing.B) {
	chunks := sseChunks(200)
	buf := make([]byte, 4096)
	read := func(body io.ReadCloser) {
		for {
			if _, err := body.Read(buf); err != nil {
				break
			}
		}
		body.Close()
	}
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			read(&chunkBody{chunks: chunks})
		}
	})
	b.Run("recorded", func(b *testing.B) {
		b.ReportAllocs()
		req := []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		for b.Loop() {
			r := newRecording(runrecord.Record{Meta: runrecord.Meta{StartedAt: time.Now()}}, 0)
			resp, err := r.roundTrip(agent.WireCall{Key: "k", Step: 1, URL: "u", Stream: true, Body: req}, func() (*http.Response, error) {
				return &http.Response{StatusCode: 200, Header: http.Header{}, Body: &chunkBody{chunks: chunks}}, nil
			})
			if err != nil {
				b.Fatal(err)
			}
			read(resp.Body)
			if !strings.HasSuffix(r.rec.LLMCalls[0].Response.Body, "\n\n") {
				b.Fatal("the body was not recorded")
			}
		}
	})
}

// BenchmarkRecordScrub is the scrub of a record when it is written, after
// its run, off the run's path: an answer of 200 streamed chunks (21 KiB of
// SSE) and its 200 TEXT_MESSAGE_CONTENT events, scrubbed message by
// message across the chunks with a run's scrubber (one registered secret)
// and the token patterns. clean has no secret; split_secret has a token
// split across two chunks and the registered secret across three.
func BenchmarkRecordScrub(b *testing.B) {
	sc := scrub.New().Child()
	sc.AddSecrets(splitKey)
	rs := recordScrubber{}.add(tools.Scrubber(sc))
	for _, c := range []struct {
		name   string
		chunks []string
	}{
		{"clean", slices.Repeat([]string{"word "}, 200)},
		{"split_secret", slices.Concat(slices.Repeat([]string{"word "}, 100), cut("a "+splitToken+" b", 10),
			cut("c "+splitKey+" d", 6, 12), slices.Repeat([]string{"word "}, 95))},
	} {
		body, evs := streamedAs(c.chunks)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				rec := runrecord.Record{LLMCalls: []runrecord.LLMCall{{Response: runrecord.WireResponse{Body: body}}}, Events: evs}
				scrubRecord(&rec, rs, []int{0})
				if c.name != "clean" && !strings.Contains(rec.LLMCalls[0].Response.Body, scrub.Redacted) {
					b.Fatal("nothing redacted")
				}
			}
		})
	}
}
