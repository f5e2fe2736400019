package server

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/state/eventlog"
	"github.com/ruleagent/ruleagent/state/runrecord"
	"github.com/ruleagent/ruleagent/tools"
)

// Recording configures what the store keeps of each run, for the editor
// to show it after the fact, for replays and for forks
// (StoreOptions.Recording). The zero value keeps nothing.
type Recording struct {
	// Records keeps each run's record (nil: none).
	Records runrecord.Store
	// Events keeps each run's events (nil: none).
	Events eventlog.Log
	// MaxBytes bounds one run's record; past it the record stops growing
	// and says so (runrecord.Options' default when 0).
	MaxBytes int
	// Replica names this process as the owner of its runs' event logs.
	Replica string
}

// recording is one run's record as it is made. Every method is safe for
// concurrent use: parallel tool calls and sub-agents record at once.
type recording struct {
	started time.Time
	max     int

	mu    sync.Mutex
	rec   runrecord.Record
	size  int
	msgs  map[string]int // message JSON -> index in rec.Messages
	tools map[string]int // tools array JSON -> index in rec.Tools
	seq   map[string]int // LLM attempts so far, by agent key
	// unscrubbed are the LLM calls whose response bodies scrubRecord has
	// yet to scrub.
	unscrubbed []int
	// scrubbers are the scrubbers of the run's agents, which scrubRecord
	// scrubs the record with.
	scrubbers recordScrubber
}

func newRecording(rec runrecord.Record, max int) *recording {
	if max <= 0 {
		max = runrecord.Options{}.Fill().MaxBytes
	}
	return &recording{started: rec.Meta.StartedAt, max: max, rec: rec, msgs: map[string]int{}, tools: map[string]int{}, seq: map[string]int{}}
}

// grow accounts for n more bytes of content, and reports whether they may
// be kept; the caller holds r.mu. A record that outgrows its bound stops
// growing and says so: it cannot be replayed, but the run still shows.
func (r *recording) grow(n int) bool {
	if r.rec.Incomplete != "" {
		return false
	}
	if r.size+n > r.max {
		r.rec.Incomplete = "the run outgrew its record's bound of " + byteSize(r.max) + " (serve --record-max-bytes): later calls are not recorded"
		return false
	}
	r.size += n
	return true
}

func (r *recording) startAgent(key string, a agent.AgentStart) {
	r.mu.Lock()
	r.rec.Agents = append(r.rec.Agents, runrecord.Agent{Key: key, RunID: a.RunID, ChainID: a.ChainID, NodeID: a.NodeID,
		Parent: a.Parent, ToolCallID: a.ToolCallID})
	r.mu.Unlock()
}

// roundTrip records one HTTP attempt of an LLM call: its request now, its
// answer as the client reads it.
func (r *recording) roundTrip(c agent.WireCall, send func() (*http.Response, error)) (*http.Response, error) {
	at := time.Since(r.started).Milliseconds()
	body := scrubBytes(c.Body, c.Scrub)
	r.mu.Lock()
	r.scrubbers = r.scrubbers.add(c.Scrub)
	req, ok := r.splitRequest(body)
	idx := -1
	if ok {
		idx = len(r.rec.LLMCalls)
		r.rec.LLMCalls = append(r.rec.LLMCalls, runrecord.LLMCall{Agent: c.Key, Seq: r.seq[c.Key], Step: c.Step, URL: c.URL,
			Stream: c.Stream, AtMs: at, Request: req})
	}
	r.seq[c.Key]++
	r.mu.Unlock()
	start := time.Now()
	resp, err := send()
	if idx < 0 {
		return resp, err
	}
	if err != nil {
		var ne net.Error
		r.setResponse(idx, runrecord.WireResponse{Error: scrubString(err.Error(), c.Scrub), Network: errors.As(err, &ne)}, start, nil)
		return nil, err
	}
	wr := runrecord.WireResponse{Status: resp.StatusCode, Header: map[string]string{}}
	for _, h := range recordedHeaders {
		if v := resp.Header.Get(h); v != "" {
			wr.Header[h] = v
		}
	}
	resp.Body = &bodyCapture{ReadCloser: resp.Body, r: r, idx: idx, resp: wr, start: start, scrub: c.Scrub}
	return resp, nil
}

// recordedHeaders are the response headers the LLM client reads.
var recordedHeaders = []string{"Content-Type", "Retry-After", "Retry-After-Ms"}

// setResponse records attempt idx's answer. A body that still needs
// scrubbing (scrub is set) is scrubbed when the record is written, off the
// run's path, with the run's other answers and events (see scrubRecord).
func (r *recording) setResponse(idx int, wr runrecord.WireResponse, start time.Time, scrub tools.Scrubber) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.grow(len(wr.Body) + len(wr.BodyBytes) + len(wr.Error)) {
		wr.Body, wr.BodyBytes = "", nil
	} else if scrub != nil {
		r.unscrubbed = append(r.unscrubbed, idx)
	}
	r.rec.LLMCalls[idx].Response = wr
	r.rec.LLMCalls[idx].DurationMs = time.Since(start).Milliseconds()
}

// toolCall runs a tool call and records its result, and the events it
// emitted (a sub-agent's are not: its run is replayed, not its events).
func (r *recording) toolCall(ctx context.Context, c tools.TapCall, run func(context.Context) (tools.Result, error)) (tools.Result, error) {
	ci := tools.CallFrom(ctx)
	var capt *eventCapture
	if ci != nil && c.Type != tools.TypeAgent {
		capt = &eventCapture{next: ci.EventSink()}
		ci.Events = capt
	}
	start := time.Now()
	res, err := run(ctx)
	var scrub tools.Scrubber
	if ci != nil && ci.Run != nil {
		scrub = ci.Run.Scrubber
	}
	tc := runrecord.ToolCall{Agent: agent.TapKey(ctx), ID: c.ID, Name: c.Name, Type: c.Type, TargetID: c.TargetID,
		Args: json.RawMessage(scrubBytes(c.Args, scrub)), DurationMs: time.Since(start).Milliseconds()}
	n := len(tc.Args)
	if err != nil {
		tc.ErrorKind, tc.Error = tools.KindName(err), scrubString(err.Error(), scrub)
		n += len(tc.Error)
	} else {
		tr := &runrecord.ToolResult{Text: scrubString(res.Text, scrub), IsError: res.IsError}
		if len(res.Parts) > 0 {
			tr.Parts, _ = json.Marshal(res.Parts)
			tr.Parts = scrubJSON(tr.Parts, scrub)
		}
		if len(res.Structured) > 0 {
			tr.Structured = scrubJSON(res.Structured, scrub)
		}
		tc.Result = tr
		n += len(tr.Text) + len(tr.Parts) + len(tr.Structured)
	}
	if capt != nil {
		tc.Events = capt.encoded()
		for _, e := range tc.Events {
			n += len(e)
		}
	}
	r.mu.Lock()
	r.scrubbers = r.scrubbers.add(scrub)
	if r.grow(n) {
		r.rec.ToolCalls = append(r.rec.ToolCalls, tc)
	}
	r.mu.Unlock()
	return res, err
}

// memory runs a session's Recall or Keep and records what it gave, what
// it emitted and how many LLM attempts it made.
func (r *recording) memory(key string, phase agent.MemoryPhase, emit func(events.Event),
	run func(emit func(events.Event)) ([]events.Message, error)) ([]events.Message, error) {
	capt := &eventCapture{next: events.SinkFunc(emit)}
	r.mu.Lock()
	before := r.seq[key]
	r.mu.Unlock()
	msgs, err := run(capt.Emit)
	m := runrecord.MemoryStep{Agent: key, Phase: string(phase), Events: capt.encoded()}
	if msgs != nil {
		m.Messages, _ = json.Marshal(msgs)
	}
	if err != nil {
		m.Error = err.Error()
	}
	n := len(m.Messages) + len(m.Error)
	for _, e := range m.Events {
		n += len(e)
	}
	r.mu.Lock()
	m.LLMCalls = r.seq[key] - before
	if r.grow(n) {
		r.rec.Memory = append(r.rec.Memory, m)
	}
	r.mu.Unlock()
	return msgs, err
}

// resumed records the answers to the run's last pause.
func (r *recording) resumed(pause runrecord.Resume, entries []ResumeEntry) {
	pause.Entries, _ = json.Marshal(entries)
	r.mu.Lock()
	r.rec.Resumes = append(r.rec.Resumes, pause)
	r.mu.Unlock()
}

// eventData is an event in the server's own encoding (every field, by its
// Go name), which records keep so that a replay emits exactly the event
// that was emitted; the AG-UI encoding drops what it does not show.
type eventData events.Event

// eventCapture keeps the events that pass through it.
type eventCapture struct {
	next events.Sink
	mu   sync.Mutex
	evs  []events.Event
}

func (c *eventCapture) Emit(e events.Event) {
	c.mu.Lock()
	c.evs = append(c.evs, e)
	c.mu.Unlock()
	if c.next != nil {
		c.next.Emit(e)
	}
}

func (c *eventCapture) encoded() []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.evs) == 0 {
		return nil
	}
	out := make([]json.RawMessage, len(c.evs))
	for i := range c.evs {
		out[i], _ = json.Marshal((*eventData)(&c.evs[i]))
	}
	return out
}

// decodeEvents reads events a record kept (eventCapture.encoded).
func decodeEvents(raw []json.RawMessage) ([]events.Event, error) {
	out := make([]events.Event, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, (*eventData)(&out[i])); err != nil {
			return nil, err
		}
	}
	return out, nil
}
