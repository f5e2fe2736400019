package mcpserve

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/server/runs"

	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// waitingRuns holds the chain runs that asked a 2026-07-28 client for input
// from inside a tool call that cannot suspend (a remote MCP tool's
// elicitation) and wait for it to retry with the answers. The
// client names its run with the opaque requestState it was given, which is
// signed: a state that was altered, belongs to another tool, or answers an
// earlier round is refused.
//
// Such a run lives in this process only (its key is the process's): the
// retry must reach this replica. A question a chain node asks, and an
// agent's approval or form, are checkpoints instead, answered on
// any replica (mcp_input_pause.go, mcp_interrupt_pause.go).
type waitingRuns struct {
	key     []byte
	timeout time.Duration
	max     int

	mu     sync.Mutex
	runs   map[string]*chainRun
	closed bool
}

// errInputTimeout ends a run whose client did not answer in time.
var errInputTimeout = errors.New("the MCP client did not answer the chain's question in time")

// ErrServerClosed ends the runs still waiting when the server closes.
var ErrServerClosed = errors.New("the MCP server closed")

func newWaitingRuns(timeout time.Duration, max int) (*waitingRuns, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return &waitingRuns{key: key, timeout: timeout, max: max, runs: map[string]*chainRun{}}, nil
}

// hold parks a run whose client is being asked for input: it moves the run
// to its next round, starts the timer that cancels it if no retry comes,
// and returns the requestState that names that round.
func (w *waitingRuns) hold(r *chainRun) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return "", ErrServerClosed
	}
	if _, ok := w.runs[r.id]; !ok {
		if len(w.runs) >= w.max {
			return "", fmt.Errorf("%d tool calls are already waiting for their clients' input; try again later", len(w.runs))
		}
		w.runs[r.id] = r
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.round++
	r.attached = false
	r.expiry = time.AfterFunc(w.timeout, func() { r.cancel(errInputTimeout) })
	return w.sign(r.id, r.chain, r.round), nil
}

// resume finds the run a requestState names, for a retry of a call to
// chain: the state must be intact, name this chain, and name the run's
// latest round, no other request may be waiting on the run, and the caller
// must be the one who started it (see identity.MayAct). The run is then
// attached to the caller, and its expiry stopped.
func (w *waitingRuns) resume(state, chain string, p identity.Principal) (*chainRun, error) {
	id, stateChain, round, err := w.verify(state)
	if err != nil {
		return nil, err
	}
	if stateChain != chain {
		return nil, errors.New("requestState belongs to a call of another tool")
	}
	w.mu.Lock()
	r, ok := w.runs[id]
	w.mu.Unlock()
	if !ok {
		return nil, errors.New("the run this requestState belongs to has ended (it finished, was cancelled, or waited longer than its input timeout): call the tool again without requestState")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !identity.MayAct(p, r.owner):
		return nil, fmt.Errorf("%w: this requestState belongs to another caller's call", runs.ErrNotYours)
	case r.attached:
		return nil, errors.New("another request is already answering this requestState")
	case round != r.round:
		return nil, errors.New("this requestState was already answered; retry with the latest one")
	}
	if r.expiry != nil && !r.expiry.Stop() {
		return nil, errInputTimeout
	}
	r.attached = true
	return r, nil
}

// release gives back a run that resume attached, its round unchanged (the
// answers were refused, so the same requestState may be retried), and
// restarts its expiry.
func (w *waitingRuns) release(r *chainRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attached = false
	r.expiry = time.AfterFunc(w.timeout, func() { r.cancel(errInputTimeout) })
}

// forget removes a run that ended.
func (w *waitingRuns) forget(r *chainRun) {
	w.mu.Lock()
	delete(w.runs, r.id)
	w.mu.Unlock()
}

// close cancels every waiting run, and refuses new ones.
func (w *waitingRuns) close() {
	w.mu.Lock()
	w.closed = true
	runs := make([]*chainRun, 0, len(w.runs))
	for _, r := range w.runs {
		runs = append(runs, r)
	}
	w.mu.Unlock()
	for _, r := range runs {
		r.cancel(ErrServerClosed)
	}
	for _, r := range runs {
		<-r.done
	}
}

// sign makes the requestState of a run's round:
// base64url(run id|chain|round) "." base64url(HMAC-SHA256).
func (w *waitingRuns) sign(id, chain string, round int) string {
	payload := id + "|" + chain + "|" + strconv.Itoa(round)
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." +
		base64.RawURLEncoding.EncodeToString(w.mac(payload))
}

func (w *waitingRuns) mac(payload string) []byte {
	m := hmac.New(sha256.New, w.key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// errTamperedState refuses a requestState that this server did not make.
var errTamperedState = errors.New("requestState failed its integrity check: pass it back exactly as it was received")

func (w *waitingRuns) verify(state string) (id, chain string, round int, err error) {
	enc, sig, ok := strings.Cut(state, ".")
	if !ok {
		return "", "", 0, errTamperedState
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(enc)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, w.mac(string(payload))) {
		return "", "", 0, errTamperedState
	}
	// The MAC vouches for the payload: the run id is hex, and chain ids
	// cannot hold "|" unnoticed because the round is parsed from the end.
	p := string(payload)
	first, last := strings.Index(p, "|"), strings.LastIndex(p, "|")
	round, err = strconv.Atoi(p[last+1:])
	if first < 0 || first == last || err != nil {
		return "", "", 0, errTamperedState
	}
	return p[:first], p[first+1 : last], round, nil
}

// randomID is a run id: 128 random bits in hex.
func randomID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// missingElicitation is the error of a chain that asked a 2026-07-28
// client that cannot show questions.
func missingElicitation(qs []ask.Question) *ProtocolError {
	desc := make([]string, len(qs))
	for i, q := range qs {
		desc[i] = ask.Describe(q)
	}
	return &ProtocolError{
		Code: CodeMissingCapability,
		Message: "the chain asked for a person's input, and the client did not declare the elicitation capability; it asked: " +
			strings.Join(desc, "; "),
		Data: map[string]any{"requiredCapabilities": map[string]any{"elicitation": map[string]any{}}},
	}
}
