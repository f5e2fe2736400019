package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/internal/aguicheck"
)

// client reads event streams; it keeps no connection limit so that a
// thousand streams run at once.
var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 2048}}

var seq atomic.Int64

// stream is what one request read.
type stream struct {
	took time.Duration
	// text is the streamed answer; lags are, for stamped chunks, the time
	// from the LLM writing each to this client reading its event.
	text string
	lags []time.Duration
}

// aguiRun runs chain id once over the AG-UI endpoint and checks the stream:
// complete (RUN_STARTED first, RUN_FINISHED last) and well-formed.
func aguiRun(base, chain, user string) (stream, error) {
	n := seq.Add(1)
	body := fmt.Sprintf(`{"threadId":"t-%d","runId":"r-%d","messages":[{"id":"m-%d","role":"user","content":%q}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`, n, n, n, user)
	var evs [][]byte
	var text strings.Builder
	var lags []time.Duration
	s, err := post(base+"/api/v1/chains/"+chain+"/agui", body, func(data []byte, at time.Time) {
		evs = append(evs, bytes.Clone(data))
		if gjson.GetBytes(data, "type").Str == "TEXT_MESSAGE_CONTENT" {
			d := gjson.GetBytes(data, "delta").Str
			text.WriteString(d)
			if lag, ok := lagOf(d, at); ok {
				lags = append(lags, lag)
			}
		}
	})
	if err != nil {
		return s, err
	}
	s.text, s.lags = text.String(), lags
	if len(evs) == 0 {
		return s, errors.New("agui: empty stream")
	}
	first, last := gjson.GetBytes(evs[0], "type").Str, gjson.GetBytes(evs[len(evs)-1], "type").Str
	if first != "RUN_STARTED" || last != "RUN_FINISHED" {
		return s, fmt.Errorf("agui: stream from %s to %s, want RUN_STARTED to RUN_FINISHED (last: %s)", first, last, evs[len(evs)-1])
	}
	if errs := aguicheck.Check(evs); len(errs) > 0 {
		return s, fmt.Errorf("agui: malformed stream: %v", errs[0])
	}
	return s, nil
}

// openaiRun runs chain id once over the OpenAI endpoint, streaming, and
// checks the stream: chunks, then [DONE]. Each request's metadata is its
// own: the server answers a request whose body repeats one of the last
// minute from that first attempt (--retry-window), as a client's retry,
// which would measure a replay instead of a run.
func openaiRun(base, chain, user string) (stream, error) {
	body := fmt.Sprintf(`{"model":%q,"stream":true,"metadata":{"benchRequest":"%d"},"messages":[{"role":"user","content":%q}]}`,
		chain, openaiRequests.Add(1), user)
	return openaiStream(base+"/v1/chat/completions", body)
}

// openaiRequests numbers openaiRun's requests.
var openaiRequests atomic.Int64

// bareRun is the bare baseline: the same streaming request straight to the
// scripted LLM.
func bareRun(llm, body string) (stream, error) {
	return openaiStream(llm+"/chat/completions", body)
}

func openaiStream(url, body string) (stream, error) {
	var text strings.Builder
	var lags []time.Duration
	done := false
	s, err := post(url, body, func(data []byte, at time.Time) {
		if string(data) == "[DONE]" {
			done = true
			return
		}
		gjson.GetBytes(data, "choices").ForEach(func(_, c gjson.Result) bool {
			d := c.Get("delta.content").Str
			text.WriteString(d)
			if lag, ok := lagOf(d, at); ok {
				lags = append(lags, lag)
			}
			return false
		})
	})
	if err != nil {
		return s, err
	}
	s.text, s.lags = text.String(), lags
	if !done {
		return s, errors.New("openai: the stream ended without [DONE]")
	}
	return s, nil
}

// post sends body and hands each SSE data payload to each, with the time it
// was read.
func post(url, body string, each func(data []byte, at time.Time)) (stream, error) {
	start := time.Now()
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return stream{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return stream{}, fmt.Errorf("%s: %s: %s", url, resp.Status, b)
	}
	r := bufio.NewReaderSize(resp.Body, 16<<10)
	for {
		line, err := r.ReadSlice('\n')
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			each(bytes.TrimRight(d, "\r\n"), time.Now())
		}
		if err == io.EOF {
			return stream{took: time.Since(start)}, nil
		}
		if err != nil {
			return stream{}, err
		}
	}
}

// lagOf reads a stamped chunk ("<unix nanoseconds> ").
func lagOf(delta string, at time.Time) (time.Duration, bool) {
	ns, err := strconv.ParseInt(strings.TrimSuffix(delta, " "), 10, 64)
	if err != nil || !strings.HasSuffix(delta, " ") {
		return 0, false
	}
	return at.Sub(time.Unix(0, ns)), true
}
