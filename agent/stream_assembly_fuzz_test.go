package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/tools"
)

// dice draws choices from the fuzzer's bytes (0 once they run out).
type dice struct {
	b []byte
	i int
}

func (d *dice) n(k int) int {
	if k <= 1 || d.i >= len(d.b) {
		return 0
	}
	v := int(d.b[d.i])
	d.i++
	return v % k
}

const fuzzRunes = `ab c"\é雪🙂{}:,` + "\n"

func (d *dice) text(maxRunes int) string {
	rs := []rune(fuzzRunes)
	var b strings.Builder
	for range d.n(maxRunes + 1) {
		b.WriteRune(rs[d.n(len(rs))])
	}
	return b.String()
}

// split cuts s into at most n non-empty pieces on rune boundaries.
func (d *dice) split(s string, n int) []string {
	var out []string
	for s != "" {
		if len(out) == n-1 {
			return append(out, s)
		}
		k := 1 + d.n(utf8.RuneCountInString(s))
		i := 0
		for range k {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// How a scenario's provider sends a call's id, name and index.
const (
	idFirst = iota // on the first fragment only
	idEvery        // on every fragment
	idLate         // on the second fragment
	idNone         // never: the assembler names the call
)

const (
	nameFirst = iota
	nameEvery
	nameLate // on the last fragment
)

const (
	indexNormal = iota // each call its own index
	indexZero          // every call at index 0
	indexAbsent        // no index field
)

// scenario is one answer and the chunks a provider streams it in.
type scenario struct {
	text, reasoning string
	calls           []events.ToolCall // in the order the turn must give them
	chunks          []string
}

// item is one piece of the answer: text, reasoning or a call's fragment.
type item struct {
	kind     byte // 't', 'r', 'c'
	text     string
	fragment map[string]any
	call     int
}

// genScenario builds an answer from the fuzzer's bytes and streams it in an
// order a provider might: every call's fragments in their own order, the
// calls, the text and the reasoning interleaved.
func genScenario(data []byte) scenario {
	d := &dice{b: data}
	idMode, nameMode, indexMode := d.n(4), d.n(3), d.n(3)
	if indexMode != indexNormal && idMode != idEvery {
		// Without an index, a fragment without an id can only continue
		// the call before it; with every call at index 0, only the call
		// that index last started.
		idMode = idFirst
	}
	interleave := indexMode == indexNormal || idMode == idEvery
	sc := scenario{text: d.text(24), reasoning: d.text(12)}
	var seqs [][]item
	seqs = append(seqs, pieces('t', d.split(sc.text, 1+d.n(6))), pieces('r', d.split(sc.reasoning, 1+d.n(4))))
	ncalls := d.n(5)
	var callSeqs [][]item
	for i := range ncalls {
		name := "echo"
		if d.n(4) == 0 {
			name = "other"
		}
		id := fmt.Sprintf("call_%x%d", d.n(256), i)
		if idMode == idNone {
			id = ""
		}
		args, _ := json.Marshal(map[string]any{"v": d.text(16), "n": i})
		frags := d.split(string(args), 1+d.n(5))
		if idMode == idLate && len(frags) < 2 {
			frags = append(frags, "")
		}
		var seq []item
		for j, a := range frags {
			fn := map[string]any{"arguments": a}
			f := map[string]any{"function": fn}
			switch indexMode {
			case indexNormal:
				f["index"] = i
			case indexZero:
				f["index"] = 0
			}
			if id != "" && (idMode == idFirst && j == 0 || idMode == idEvery || idMode == idLate && j == 1) {
				f["id"] = id
			}
			if j == 0 {
				f["type"] = "function"
			}
			if nameMode == nameFirst && j == 0 || nameMode == nameEvery || nameMode == nameLate && j == len(frags)-1 {
				fn["name"] = name
			}
			seq = append(seq, item{kind: 'c', fragment: f, call: i})
		}
		callSeqs = append(callSeqs, seq)
		sc.calls = append(sc.calls, events.ToolCall{ID: id, Name: name, Arguments: string(args)})
	}
	if interleave {
		seqs = append(seqs, callSeqs...)
	} else {
		var all []item
		for _, s := range callSeqs {
			all = append(all, s...)
		}
		seqs = append(seqs, all)
	}
	var order []item
	for {
		var open []int
		for i, s := range seqs {
			if len(s) > 0 {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			break
		}
		k := open[d.n(len(open))]
		order = append(order, seqs[k][0])
		seqs[k] = seqs[k][1:]
	}
	// The turn gives calls in index order; without distinct indexes, in
	// the order of their first fragments.
	if indexMode != indexNormal {
		var arrived []events.ToolCall
		seen := map[int]bool{}
		for _, it := range order {
			if it.kind == 'c' && !seen[it.call] {
				seen[it.call] = true
				arrived = append(arrived, sc.calls[it.call])
			}
		}
		sc.calls = arrived
	}
	for i := range sc.calls {
		if sc.calls[i].ID == "" {
			sc.calls[i].ID = "call_" + strconv.Itoa(i)
		}
	}
	sc.chunks = packChunks(d, order, len(sc.calls) > 0)
	return sc
}

func pieces(kind byte, ps []string) []item {
	out := make([]item, len(ps))
	for i, p := range ps {
		out[i] = item{kind: kind, text: p}
	}
	return out
}

// packChunks puts items into chunks, several tool-call fragments (and a
// text or reasoning piece) sometimes sharing one, and ends the stream.
func packChunks(d *dice, order []item, calls bool) []string {
	var chunks []string
	delta := map[string]any{"role": "assistant"}
	var frags []any
	flush := func() {
		if len(frags) > 0 {
			delta["tool_calls"] = frags
		}
		b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}})
		chunks = append(chunks, string(b))
		delta, frags = map[string]any{}, nil
	}
	for i, it := range order {
		switch it.kind {
		case 't':
			delta["content"] = it.text
		case 'r':
			delta["reasoning_content"] = it.text
		case 'c':
			frags = append(frags, it.fragment)
		}
		// The accumulator reads a delta's reasoning, then its text, then
		// its calls: only a later kind may share the chunk.
		if i+1 < len(order) && d.n(3) == 0 && laterKind(it.kind, order[i+1].kind) {
			continue
		}
		flush()
	}
	if len(delta) > 0 {
		flush()
	}
	reason := "stop"
	if calls {
		reason = "tool_calls"
	}
	b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "model": "m",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": reason}}})
	return append(chunks, string(b))
}

func laterKind(a, b byte) bool {
	rank := map[byte]int{'r': 0, 't': 1, 'c': 2}
	return rank[b] > rank[a] || a == 'c' && b == 'c'
}

func (sc *scenario) sse() string {
	var b strings.Builder
	for _, c := range sc.chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// checkingDeltas checks what reaches a Deltas: each call announced once,
// its arguments only after, in order.
type checkingDeltas struct {
	t               *testing.T
	text, reasoning strings.Builder
	started         map[int][2]string
	args            map[int]*strings.Builder
}

func (c *checkingDeltas) Text(s string) (string, error) { c.text.WriteString(s); return s, nil }
func (c *checkingDeltas) Reasoning(s string) (string, error) {
	c.reasoning.WriteString(s)
	return s, nil
}
func (c *checkingDeltas) ToolCallStart(key int, id, name string) error {
	if _, ok := c.started[key]; ok {
		c.t.Fatalf("call %d announced twice", key)
	}
	c.started[key] = [2]string{id, name}
	c.args[key] = &strings.Builder{}
	return nil
}
func (c *checkingDeltas) ToolCallArgs(key int, s string) (string, error) {
	b, ok := c.args[key]
	if !ok {
		c.t.Fatalf("arguments of call %d before it was announced", key)
	}
	b.WriteString(s)
	return s, nil
}

// FuzzStreamAssembly streams generated answers (tool calls, text and
// reasoning, in chunk orders providers use: interleaved calls, ids late or
// repeated, names late, every call at index 0, no index, no ids) through
// the accumulator and through a whole run. The turn must equal the answer,
// the deltas must be well-formed, and the run's events must be valid
// AG-UI with each call's result under that call's id.
func FuzzStreamAssembly(f *testing.F) {
	for _, seed := range []string{"", "\x00\x00\x00\x03\x05\x07", "\x01\x01\x00\x04abcdefgh", "\x02\x02\x00\x03\x09\x08\x07\x06",
		"\x01\x00\x01\x04zzzzzzzzzzzz", "\x00\x02\x02\x03\x01\x02\x03\x04\x05\x06\x07", "\x03\x00\x00\x04\x10\x20\x30\x40\x50\x60"} {
		f.Add([]byte(seed))
	}
	a := fuzzAgent(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := genScenario(data)
		d := &checkingDeltas{t: t, started: map[int][2]string{}, args: map[int]*strings.Builder{}}
		acc := &accumulator{d: d}
		if err := acc.readStream(strings.NewReader(sc.sse())); err != nil {
			t.Fatalf("%v\n%s", err, sc.sse())
		}
		turn := &acc.turn
		if turn.Content != sc.text || turn.Reasoning != sc.reasoning || d.text.String() != sc.text || d.reasoning.String() != sc.reasoning {
			t.Fatalf("text %q / %q, reasoning %q / %q; want %q, %q", turn.Content, d.text.String(), turn.Reasoning, d.reasoning.String(), sc.text, sc.reasoning)
		}
		if len(turn.ToolCalls) != len(sc.calls) || len(d.started) != len(sc.calls) {
			t.Fatalf("%d calls (%d announced), want %d\n%s", len(turn.ToolCalls), len(d.started), len(sc.calls), sc.sse())
		}
		for i, want := range sc.calls {
			got := turn.ToolCalls[i]
			key := turn.Key(i)
			if got != want || d.started[key] != [2]string{want.ID, want.Name} || d.args[key].String() != want.Arguments {
				t.Fatalf("call %d: %+v, announced %v with %q; want %+v\n%s", i, got, d.started[key], d.args[key].String(), want, sc.sse())
			}
		}
		checkRun(t, a, sc)
	})
}

// checkRun runs the scenario's answer as the first turn of a run.
func checkRun(t *testing.T, a *Agent, sc scenario) {
	var rec events.Recorder
	ctx := context.WithValue(context.Background(), answerKey{}, sc.sse())
	if _, err := a.Run(ctx, Input{Messages: benchInput, Stream: true}, &rec); err != nil {
		t.Fatalf("run: %v\n%s", err, sc.sse())
	}
	for _, v := range aguicheck.Check(rec.JSON()) {
		t.Errorf("AG-UI violation: %v", v)
	}
	results := map[string]string{}
	for _, e := range rec.Events() {
		if e.Type == events.ToolCallResult {
			results[e.ToolCallID] = e.Content
		}
	}
	for _, c := range sc.calls {
		got, ok := results[c.ID]
		switch {
		case !ok:
			t.Errorf("no result for %s", c.ID)
		case c.Name == "echo" && got != c.Arguments:
			t.Errorf("result of %s is %q, want its own arguments %q", c.ID, got, c.Arguments)
		case c.Name == "other" && !strings.Contains(got, `no tool named "other"`):
			t.Errorf("result of %s (other) is %q", c.ID, got)
		}
	}
	if t.Failed() {
		t.Fatalf("stream:\n%s", sc.sse())
	}
}

type answerKey struct{}

// scenarioModel answers a run's first turn with the stream in the request's
// context, and any later turn with a short final answer.
type scenarioModel struct{}

func (scenarioModel) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	req.Body.Close()
	answer := req.Context().Value(answerKey{}).(string)
	if bytes.Contains(body, []byte(`"role":"assistant"`)) {
		answer = "data: " + `{"choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	}
	return &http.Response{StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(answer)),
		ContentLength: -1, Request: req}, nil
}

func fuzzAgent(tb testing.TB) *Agent {
	client, err := NewClient(LLMConfig{Endpoints: []Endpoint{{URL: "http://fuzz.invalid/v1", Model: "m"}},
		HTTPClient: &http.Client{Transport: scenarioModel{}}})
	if err != nil {
		tb.Fatal(err)
	}
	reg := tools.NewRegistry()
	if err := reg.Register(tools.Definition{Name: "echo", New: func(tools.BuildContext, json.RawMessage) (tools.Tool, error) {
		return tools.Func{Spec: tools.Info{Name: "echo", Description: "Answers its arguments.", Parameters: json.RawMessage(`{"type":"object"}`)},
			Fn: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
				return tools.TextResult(string(args)), nil
			}}, nil
	}}); err != nil {
		tb.Fatal(err)
	}
	set, err := tools.Build(context.Background(), []tools.Spec{{Type: tools.TypeBuiltin, Name: "echo"}}, tools.BuildEnv{Registry: reg})
	if err != nil {
		tb.Fatal(err)
	}
	a, err := New(Config{LLM: client, Tools: set, ParallelToolCalls: true, RepeatLimit: -1})
	if err != nil {
		tb.Fatal(err)
	}
	return a
}
