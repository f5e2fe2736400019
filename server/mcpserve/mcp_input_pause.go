package mcpserve

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// An MCP call whose chain nodes ask a 2026-07-28 client for input pauses
// as a checkpoint, not a goroutine: the nodes that asked end their
// branches (ask.ErrPending), and when the run has ended, what it needs to
// go on (the nodes, the messages they had received, their questions) is
// saved in the store's checkpoint.Store, the one the other pauses use
// (memory, the bbolt state file, or the fleet's Redis), for
// MCPOptions.InputTimeout. The call answers input_required with a
// requestState naming the checkpoint and a random token kept in it: the
// state is checked against the stored checkpoint, so it verifies on every
// replica and after a restart, with no key to share.
//
// The retry, on any replica, checks the state, the caller and the answers
// (against the questions' schemas) before it claims the checkpoint
// (checkpoint.Store.Claim: exactly one claimant), then deletes it and
// enters the chain again at the nodes that asked, which get their answers
// at once. A second retry with the same state finds no checkpoint (or a
// newer one, with another token) and is refused.

// inputPauseKind marks an input pause among the store's checkpoints.
const inputPauseKind = "mcp-input"

// inputPause is the checkpoint of an MCP call waiting for its client's
// input.
type inputPause struct {
	Kind     string            `json:"kind"`
	RunID    string            `json:"runId"`
	Chain    string            `json:"chain"`
	Owner    string            `json:"owner,omitempty"`
	Token    string            `json:"token"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Asked    []pausedAsk       `json:"asked"`
	// Traceparent, Tracestate: the paused segment's trace context.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// pausedAsk is one node that asked: Key is the key the client answers
// under (unique in the pause), Question as the node asked it.
type pausedAsk struct {
	Key      string               `json:"key"`
	NodeID   string               `json:"nodeId"`
	Msg      components.StoredMsg `json:"msg"`
	Question ask.Question         `json:"question"`
}

// IsInputPause reports whether checkpoint data is an input pause (not a
// checkpoint.State: the runs API and the expiry timers leave it alone).
func IsInputPause(data []byte) bool {
	return bytes.Contains(data[:min(len(data), 32)], []byte(`"kind":"`+inputPauseKind+`"`))
}

// inputStatePrefix starts the requestState of an input pause; the state
// of a run waiting in this process (waitingRuns) never starts so.
const inputStatePrefix = "c."

// pauseRun saves run, which ended with nodes that asked, as an input
// pause, and returns its questions and requestState.
func (c *chainTools) pauseRun(ctx context.Context, run *chainRun) ([]ask.Question, string, error) {
	token, err := randomID()
	if err != nil {
		return nil, "", err
	}
	p := &inputPause{Kind: inputPauseKind, RunID: run.id, Chain: run.chain, Owner: run.owner, Token: token,
		Metadata: map[string]string{"source": "mcp"}, Traceparent: run.traceparent, Tracestate: run.tracestate}
	if run.owner != "" {
		p.Metadata["userId"] = run.owner
	}
	taken := map[string]bool{}
	qs := make([]ask.Question, 0, len(run.asked))
	for _, a := range run.asked {
		key := a.Question.Key()
		for n := 2; taken[key]; n++ {
			key = fmt.Sprintf("%s_%d", a.Question.Key(), n)
		}
		taken[key] = true
		p.Asked = append(p.Asked, pausedAsk{Key: key, NodeID: a.NodeID, Msg: components.StoreMsg(a.Msg), Question: a.Question})
		q := a.Question
		q.ID = key
		qs = append(qs, q)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	cps := c.store.Checkpoints()
	// A run paused before under this id was claimed and deleted: the new
	// pause is its next round, with a new token.
	if err := cps.Save(ctx, &checkpoint.Checkpoint{RunID: run.id, Data: data, Owner: run.owner, Holder: "",
		Expires: time.Now().Add(c.opts.InputTimeout)}); err != nil {
		return nil, "", fmt.Errorf("the chain asked for input, and its run could not be kept: %w", err)
	}
	return qs, inputStatePrefix + base64.RawURLEncoding.EncodeToString([]byte(run.id)) + "." + token, nil
}

// errPauseGone refuses a requestState whose checkpoint is no more.
var errPauseGone = errors.New("the run this requestState belongs to has ended (it was answered already, was cancelled, or waited longer than its input timeout): call the tool again without requestState")

// claimPause checks a retry's requestState, caller and answers against the
// input pause it names, then claims the checkpoint and deletes it: the
// caller goes on with the run, and nobody else can. Nothing is claimed
// when anything is refused, so the same state may be retried. The answers
// it returns are keyed as the nodes ask.
func (c *chainTools) claimPause(ctx context.Context, state, chain string, p identity.Principal,
	responses map[string]json.RawMessage) (*inputPause, map[string]json.RawMessage, error) {
	enc, token, ok := strings.Cut(strings.TrimPrefix(state, inputStatePrefix), ".")
	id, err := base64.RawURLEncoding.DecodeString(enc)
	if !ok || err != nil || len(id) == 0 {
		return nil, nil, errTamperedState
	}
	cps := c.store.Checkpoints()
	cp, err := cps.Load(ctx, string(id))
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return nil, nil, errPauseGone
	case err != nil:
		return nil, nil, fmt.Errorf("%w: %v", errCheckpoints, err)
	}
	var pause inputPause
	if !IsInputPause(cp.Data) || json.Unmarshal(cp.Data, &pause) != nil {
		return nil, nil, errTamperedState
	}
	switch {
	case subtle.ConstantTimeCompare([]byte(token), []byte(pause.Token)) != 1:
		return nil, nil, errors.New("this requestState was altered, or was already answered: retry with the latest one, exactly as it was received")
	case pause.Chain != chain:
		return nil, nil, errors.New("requestState belongs to a call of another tool")
	case !identity.MayAct(p, pause.Owner):
		return nil, nil, fmt.Errorf("%w: this requestState belongs to another caller's call", runs.ErrNotYours)
	}
	answers := map[string]json.RawMessage{}
	var missing []string
	for _, a := range pause.Asked {
		raw, ok := responses[a.Key]
		if !ok {
			missing = append(missing, a.Key)
			continue
		}
		if _, err := decodeAnswer(raw, a.Question); err != nil {
			return nil, nil, fmt.Errorf("inputResponses[%q]: %w", a.Key, err)
		}
		answers[a.Question.Key()] = raw
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("inputResponses must answer every question of the requestState; missing %s", strings.Join(missing, ", "))
	}
	claimed, err := cps.Claim(ctx, pause.RunID, c.store.Replica())
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return nil, nil, errPauseGone
	case errors.Is(err, checkpoint.ErrClaimed):
		return nil, nil, errors.New("another request is already answering this requestState")
	case err != nil:
		return nil, nil, fmt.Errorf("%w: %v", errCheckpoints, err)
	}
	if !bytes.Equal(claimed.Data, cp.Data) {
		_ = cps.Release(ctx, pause.RunID, claimed.Fence)
		return nil, nil, errors.New("this requestState was already answered: retry with the latest one")
	}
	if err := cps.Delete(ctx, pause.RunID, claimed.Fence); err != nil {
		return nil, nil, fmt.Errorf("another request is already answering this requestState: %w", err)
	}
	return &pause, answers, nil
}

// dropPause deletes the input pause a requestState names, if it is still
// there: nobody will answer it (its task was cancelled).
func (c *chainTools) dropPause(ctx context.Context, state string) {
	enc, _, _ := strings.Cut(strings.TrimPrefix(state, inputStatePrefix), ".")
	id, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(id) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if claimed, err := c.store.Checkpoints().Claim(ctx, string(id), c.store.Replica()); err == nil {
		_ = c.store.Checkpoints().Delete(ctx, string(id), claimed.Fence)
	}
}

// askedQuestions are the questions of the nodes that asked.
func askedQuestions(asked []components.AskedNode) ([]ask.Question, bool) {
	qs := make([]ask.Question, len(asked))
	for i, a := range asked {
		qs[i] = a.Question
	}
	return qs, len(qs) > 0
}

// chainOf is the chain a tool name runs.
func (c *chainTools) chainOf(tool string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.byName[tool]
	return id, ok
}
