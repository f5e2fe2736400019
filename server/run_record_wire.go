package server

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/state/runrecord"
	"github.com/ruleagent/ruleagent/tools"
)

// splitRequest turns a request body into its record form: the messages
// and the tools array by index in the record's tables (a conversation is
// sent again every turn: each message is kept once), the other fields as
// they are. The caller holds r.mu. It reports false when the record has
// no room left (or the body is not a JSON object).
func (r *recording) splitRequest(body []byte) (runrecord.WireRequest, bool) {
	req := runrecord.WireRequest{Tools: -1}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return req, false
	}
	fields := []byte{'{'}
	var newMsgs []json.RawMessage
	var newTools json.RawMessage
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "messages":
			v.ForEach(func(_, m gjson.Result) bool {
				i, ok := r.msgs[m.Raw]
				if !ok {
					i = len(r.rec.Messages) + len(newMsgs)
					r.msgs[m.Raw] = i
					newMsgs = append(newMsgs, json.RawMessage(m.Raw))
				}
				req.Messages = append(req.Messages, i)
				return true
			})
		case "tools":
			i, ok := r.tools[v.Raw]
			if !ok {
				i = len(r.rec.Tools)
				r.tools[v.Raw] = i
				newTools = json.RawMessage(v.Raw)
			}
			req.Tools = i
		default:
			if len(fields) > 1 {
				fields = append(fields, ',')
			}
			fields = append(fields, k.Raw...)
			fields = append(fields, ':')
			fields = append(fields, v.Raw...)
		}
		return true
	})
	req.Fields = append(fields, '}')
	n := len(req.Fields) + len(newTools)
	for _, m := range newMsgs {
		n += len(m)
	}
	if !r.grow(n) {
		// Nothing of this request is kept: forget what it added.
		for _, m := range newMsgs {
			delete(r.msgs, string(m))
		}
		if newTools != nil {
			delete(r.tools, string(newTools))
		}
		return req, false
	}
	r.rec.Messages = append(r.rec.Messages, newMsgs...)
	if newTools != nil {
		r.rec.Tools = append(r.rec.Tools, newTools)
	}
	return req, true
}

// joinRequest is the body a record's request stands for, for comparisons
// and exports: its fields, then messages and tools.
func joinRequest(rec *runrecord.Record, req *runrecord.WireRequest) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(req.Fields, &fields); err != nil {
		return nil, fmt.Errorf("a recorded request's fields: %w", err)
	}
	msgs := make([]json.RawMessage, len(req.Messages))
	for i, m := range req.Messages {
		if m < 0 || m >= len(rec.Messages) {
			return nil, fmt.Errorf("a recorded request names message %d of %d", m, len(rec.Messages))
		}
		msgs[i] = rec.Messages[m]
	}
	fields["messages"], _ = json.Marshal(msgs)
	if req.Tools >= 0 {
		if req.Tools >= len(rec.Tools) {
			return nil, fmt.Errorf("a recorded request names tools array %d of %d", req.Tools, len(rec.Tools))
		}
		fields["tools"] = rec.Tools[req.Tools]
	}
	return json.Marshal(fields)
}

// bodyCapture records a response body as the LLM client reads it, and
// the error that ended it early, if one did. Each streamed chunk is
// copied once, into buf; the body is scrubbed once, when the record is
// written after the run (scrubRecord), not on the run's path.
type bodyCapture struct {
	io.ReadCloser
	r     *recording
	idx   int
	resp  runrecord.WireResponse
	start time.Time
	scrub tools.Scrubber

	buf  strings.Builder
	once sync.Once
}

func (b *bodyCapture) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf.Write(p[:n])
	if err != nil && err != io.EOF && b.resp.Broken == "" {
		b.resp.Broken = scrubString(err.Error(), b.scrub)
	}
	return n, err
}

func (b *bodyCapture) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() {
		b.resp.Body = b.buf.String()
		scrub := b.scrub
		if scrub == nil {
			scrub = defaultScrubber
		}
		b.r.setResponse(b.idx, b.resp, b.start, scrub)
	})
	return err
}

// scrubString redacts s with scrub (the static patterns when nil).
func scrubString(s string, scrub tools.Scrubber) string {
	if scrub == nil {
		scrub = defaultScrubber
	}
	return scrub.Scrub(s)
}

// scrubBytes redacts b, returning b itself when there was nothing to
// redact.
func scrubBytes(b []byte, scrub tools.Scrubber) []byte {
	s := scrubString(string(b), scrub)
	if len(s) == len(b) && s == string(b) {
		return b
	}
	return []byte(s)
}

// scrubJSON redacts a JSON value's text; a value the redaction broke is
// dropped rather than kept unreadable.
func scrubJSON(b []byte, scrub tools.Scrubber) json.RawMessage {
	out := scrubBytes(b, scrub)
	if !json.Valid(out) {
		return nil
	}
	return out
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
