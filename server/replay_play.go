package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/state/runrecord"
	"github.com/ruleagent/ruleagent/tools"
)

// ErrDivergence reports a replay (or the replayed part of a fork) that
// did not do what the recorded run did: an LLM request that differs from
// the recorded one, a call the record does not have. The run stops there.
var ErrDivergence = errors.New("the replay diverged from the recorded run")

// Divergence is the first place a replay did not do what the recorded run
// did. It is an error (errors.Is ErrDivergence).
type Divergence struct {
	// What names the call: "LLM call 2 of agent run tools:agent (turn 2)".
	What string `json:"what"`
	// Field is the first field that differs (messages[3].content, url,
	// args.key, ...), or what is missing.
	Field    string `json:"field"`
	Recorded string `json:"recorded,omitempty"`
	Replayed string `json:"replayed,omitempty"`
}

func (d *Divergence) Error() string {
	msg := fmt.Sprintf("%s: %s: %s", ErrDivergence.Error(), d.What, d.Field)
	if d.Recorded != "" || d.Replayed != "" {
		msg += fmt.Sprintf(" (recorded %s, replayed %s)", d.Recorded, d.Replayed)
	}
	return msg
}

func (d *Divergence) Unwrap() error { return ErrDivergence }

// readOnlyBuiltins are the built-in tools that change nothing, which a
// replay may run again (ReplayOptions.ReRunReadOnly).
var readOnlyBuiltins = map[string]bool{"read": true, "grep": true, "glob": true, "skill": true}

// playback answers a run's LLM calls, tool calls and memory from a
// record. A fork's playback goes live (the world answers) from its step
// on: for its agent run from that turn, and for every agent run those
// turns start.
type playback struct {
	rec      *runrecord.Record
	readOnly bool
	fork     *forkPlan
	// stop ends the run at its first divergence.
	stop func(error)

	mu         sync.Mutex
	calls      map[string][]*runrecord.LLMCall
	cursor     map[string]int
	toolCalls  map[string]*runrecord.ToolCall
	memSteps   map[string][]*runrecord.MemoryStep
	memCursor  map[string]int
	live       map[string]bool   // agent keys answered by the world
	runKeys    map[string]string // agent run id -> key
	divergence *Divergence
}

func newPlayback(rec *runrecord.Record) *playback {
	p := &playback{rec: rec, calls: map[string][]*runrecord.LLMCall{}, cursor: map[string]int{},
		toolCalls: map[string]*runrecord.ToolCall{}, memSteps: map[string][]*runrecord.MemoryStep{}, memCursor: map[string]int{},
		live: map[string]bool{}, runKeys: map[string]string{}}
	for i := range rec.LLMCalls {
		c := &rec.LLMCalls[i]
		p.calls[c.Agent] = append(p.calls[c.Agent], c)
	}
	for i := range rec.ToolCalls {
		c := &rec.ToolCalls[i]
		p.toolCalls[c.Agent+"\x00"+c.ID] = c
	}
	for i := range rec.Memory {
		m := &rec.Memory[i]
		p.memSteps[m.Agent+"\x00"+m.Phase] = append(p.memSteps[m.Agent+"\x00"+m.Phase], m)
	}
	return p
}

type playbackKey struct{}

// withPlayback returns ctx whose run (Store.startRun) plays p.
func withPlayback(ctx context.Context, p *playback) context.Context {
	return context.WithValue(ctx, playbackKey{}, p)
}

func playbackFrom(ctx context.Context) *playback {
	p, _ := ctx.Value(playbackKey{}).(*playback)
	return p
}

// diverge records the first divergence, stops the run, and returns it.
func (p *playback) diverge(d *Divergence) error {
	p.mu.Lock()
	first := p.divergence == nil
	if first {
		p.divergence = d
	}
	stop := p.stop
	p.mu.Unlock()
	if first && stop != nil {
		stop(d)
	}
	return d
}

// firstDivergence is the divergence that stopped the run, if any.
func (p *playback) firstDivergence() *Divergence {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.divergence
}

func (p *playback) isLive(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live[key]
}

// liveRun reports whether the agent run with id runID is answered by the
// world (its usage is then spent).
func (p *playback) liveRun(runID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live[p.runKeys[runID]]
}

func (p *playback) startAgent(key, parent, runID string) {
	p.mu.Lock()
	p.runKeys[runID] = key
	if parent != "" && p.live[parent] {
		p.live[key] = true
	}
	p.mu.Unlock()
}

// turn goes live at a fork's step, with its edits and model.
func (p *playback) turn(_ context.Context, key string, step int, conv []events.Message, llm *agent.Client) (*agent.Client, error) {
	f := p.fork
	if f == nil || key != f.agent || step < f.step {
		return llm, nil
	}
	p.mu.Lock()
	p.live[key] = true
	p.mu.Unlock()
	if step == f.step {
		f.apply(conv)
	}
	return f.client(llm)
}

// roundTrip answers an LLM attempt from the record: the next one of its
// agent run, whose request must be the one recorded.
func (p *playback) roundTrip(_ context.Context, c agent.WireCall, send func() (*http.Response, error)) (*http.Response, error) {
	if p.isLive(c.Key) {
		return send()
	}
	p.mu.Lock()
	list := p.calls[c.Key]
	i := p.cursor[c.Key]
	p.cursor[c.Key]++
	p.mu.Unlock()
	what := fmt.Sprintf("LLM call %d of %s (turn %d)", i+1, agentName(c.Key), c.Step)
	// Calls are matched by their place in their agent run.
	at := slices.IndexFunc(list, func(rc *runrecord.LLMCall) bool { return rc.Seq == i })
	if at < 0 {
		return nil, p.diverge(&Divergence{What: what, Field: "not in the record", Recorded: fmt.Sprintf("%d calls", len(list))})
	}
	rc := list[at]
	// A fork's own agent sends its early turns with the edits the fork
	// made to them: its recorded answers are taken as they are.
	if p.fork == nil || c.Key != p.fork.agent {
		if d := p.compareRequest(rc, &c); d != nil {
			d.What = what
			return nil, p.diverge(d)
		}
	}
	return replayResponse(&rc.Response)
}

// compareRequest names the first difference between a recorded request
// and the one sent now.
func (p *playback) compareRequest(rc *runrecord.LLMCall, c *agent.WireCall) *Divergence {
	if rc.URL != c.URL {
		return &Divergence{Field: "url", Recorded: rc.URL, Replayed: c.URL}
	}
	if rc.Stream != c.Stream {
		return &Divergence{Field: "stream", Recorded: fmt.Sprint(rc.Stream), Replayed: fmt.Sprint(c.Stream)}
	}
	want, err := joinRequest(p.rec, &rc.Request)
	if err != nil {
		return &Divergence{Field: "the recorded request: " + err.Error()}
	}
	return diffJSON(want, scrubBytes(c.Body, c.Scrub))
}

// replayResponse is a recorded answer as the HTTP client would have got
// it.
func replayResponse(w *runrecord.WireResponse) (*http.Response, error) {
	if w.Status == 0 {
		return nil, &replayedError{msg: w.Error, network: w.Network}
	}
	h := http.Header{}
	for k, v := range w.Header {
		h.Set(k, v)
	}
	body := &replayBody{r: bytes.NewReader(w.BodyData()), broken: w.Broken}
	return &http.Response{StatusCode: w.Status, Status: fmt.Sprintf("%d %s", w.Status, http.StatusText(w.Status)),
		Header: h, Body: body, ContentLength: -1, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

// replayedError is a recorded request failure (before any response).
type replayedError struct {
	msg     string
	network bool
}

func (e *replayedError) Error() string { return e.msg }

// Timeout and Temporary make a recorded network failure a net.Error,
// which the LLM client retries as it did.
func (e *replayedError) Timeout() bool   { return false }
func (e *replayedError) Temporary() bool { return false }

// replayBody is a recorded body: its bytes, then the error that ended it
// early, if one did.
type replayBody struct {
	r      *bytes.Reader
	broken string
}

func (b *replayBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF && b.broken != "" {
		return n, errors.New(b.broken)
	}
	return n, err
}

func (b *replayBody) Close() error { return nil }

// toolCall answers a tool call from the record, emitting the events the
// call emitted, unless its tool runs again in a replay: a sub-agent (its
// run is replayed), a read-only built-in when asked, anything live.
func (p *playback) toolCall(ctx context.Context, c tools.TapCall, run func(context.Context) (tools.Result, error)) (tools.Result, error) {
	key := agent.TapKey(ctx)
	if p.isLive(key) || c.Type == tools.TypeAgent || p.readOnly && c.Type == tools.TypeBuiltin && readOnlyBuiltins[c.Name] {
		return run(ctx)
	}
	what := fmt.Sprintf("tool call %s (%s) of %s", c.ID, c.Name, agentName(key))
	tc := p.toolCalls[key+"\x00"+c.ID]
	if tc == nil {
		return tools.Result{}, p.diverge(&Divergence{What: what, Field: "not in the record"})
	}
	if tc.Name != c.Name {
		return tools.Result{}, p.diverge(&Divergence{What: what, Field: "name", Recorded: tc.Name, Replayed: c.Name})
	}
	if d := diffJSON(tc.Args, scrubBytes(c.Args, scrubberOf(ctx))); d != nil {
		d.What, d.Field = what, "arguments"+dotted(d.Field)
		return tools.Result{}, p.diverge(d)
	}
	if text, ok := p.fork.toolResult(key, c.ID); ok {
		return tools.TextResult(text), nil
	}
	evs, err := decodeEvents(tc.Events)
	if err != nil {
		return tools.Result{}, p.diverge(&Divergence{What: what, Field: "its recorded events: " + err.Error()})
	}
	if sink := tools.CallFrom(ctx).EventSink(); sink != nil {
		for _, ev := range evs {
			sink.Emit(ev)
		}
	}
	if tc.Result == nil {
		return tools.Result{}, &replayedToolError{kind: toolErrorKinds[tc.ErrorKind], msg: tc.Error}
	}
	res := tools.Result{Text: tc.Result.Text, IsError: tc.Result.IsError, Structured: tc.Result.Structured}
	if len(tc.Result.Parts) > 0 {
		_ = json.Unmarshal(tc.Result.Parts, &res.Parts)
	}
	return res, nil
}

func scrubberOf(ctx context.Context) tools.Scrubber {
	if ci := tools.CallFrom(ctx); ci != nil && ci.Run != nil {
		return ci.Run.Scrubber
	}
	return nil
}

// replayedToolError is a recorded tool failure: its text, and its kind
// for errors.Is and the events.
type replayedToolError struct {
	kind error
	msg  string
}

func (e *replayedToolError) Error() string { return e.msg }
func (e *replayedToolError) Unwrap() error { return e.kind }

// toolErrorKinds maps the kinds' names (tools.KindName) to the kinds.
var toolErrorKinds = map[string]error{
	"approval_denied": tools.ErrApprovalDenied, "permission_denied": tools.ErrPolicyDenied, "limit_exceeded": tools.ErrLimitExceeded,
	"invalid_args": tools.ErrInvalidArgs, "invalid_path": tools.ErrInvalidPath, "file_not_found": tools.ErrFileNotFound,
	"timeout": tools.ErrTimeout, "repeated_call": tools.ErrRepeatedCall, "not_found": tools.ErrNotFound,
	"execution_failed": tools.ErrExecutionFailed,
}

// memory gives back what a session's Recall or Keep gave and emitted,
// without running it, and skips the LLM calls it made.
func (p *playback) memory(_ context.Context, key string, phase agent.MemoryPhase, emit func(events.Event),
	run func(emit func(events.Event)) ([]events.Message, error)) ([]events.Message, error) {
	if p.isLive(key) {
		return run(emit)
	}
	k := key + "\x00" + string(phase)
	p.mu.Lock()
	list := p.memSteps[k]
	i := p.memCursor[k]
	p.memCursor[k]++
	var m *runrecord.MemoryStep
	if i < len(list) {
		m = list[i]
		p.cursor[key] += m.LLMCalls
	}
	p.mu.Unlock()
	what := fmt.Sprintf("the session's %s for %s", phase, agentName(key))
	if m == nil {
		return nil, p.diverge(&Divergence{What: what, Field: "not in the record"})
	}
	evs, err := decodeEvents(m.Events)
	if err != nil {
		return nil, p.diverge(&Divergence{What: what, Field: "its recorded events: " + err.Error()})
	}
	for _, ev := range evs {
		emit(ev)
	}
	if m.Error != "" {
		return nil, errors.New(m.Error)
	}
	var msgs []events.Message
	if len(m.Messages) > 0 {
		if err := json.Unmarshal(m.Messages, &msgs); err != nil {
			return nil, p.diverge(&Divergence{What: what, Field: "its recorded messages: " + err.Error()})
		}
	}
	return msgs, nil
}

// unused names the first recorded LLM call a finished replay did not
// make, if any.
func (p *playback) unused() *Divergence {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.rec.LLMCalls {
		if !p.live[c.Agent] && p.cursor[c.Agent] <= c.Seq {
			return &Divergence{What: fmt.Sprintf("LLM call %d of %s (turn %d)", c.Seq+1, agentName(c.Agent), c.Step),
				Field: "recorded, but the replay did not make it"}
		}
	}
	return nil
}

// agentName is an agent key as messages show it.
func agentName(key string) string {
	if key == "" {
		return "the chain (outside any agent)"
	}
	return "agent run " + key
}

func dotted(path string) string {
	if path == "" || path[0] == '[' {
		return path
	}
	return "." + path
}
