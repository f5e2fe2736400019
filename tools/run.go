package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools/limits"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// Scrubber redacts secrets from text (see package tools/scrub).
type Scrubber interface {
	Scrub(string) string
}

// Run is the per-run state every call of the run shares.
type Run struct {
	// Sink receives the calls' events (the run's events.Stream).
	Sink events.Sink
	// Aspects intercept the calls (ToolCallBefore, ToolCallAfter).
	Aspects *aspects.Manager
	// Point identifies the run; the wrapper sets Tool per call.
	Point aspects.Point
	// Scrubber redacts results and errors; nil disables (tests only).
	Scrubber Scrubber
	// MaxOutput truncates results to this many characters; 0 = no limit.
	MaxOutput int
	// MaxCalls bounds the tool calls of the run; 0 = no limit.
	MaxCalls int
	// RepeatLimit refuses the Nth identical call (same tool, same
	// arguments) of the run; 0 = no limit.
	RepeatLimit int
	// Meta is the incoming message metadata and chain context, used to
	// fill bound parameters (see Spec.Bind).
	Meta BindValues
	// MaxSubagents bounds the sub-agents running at once in this run; 0
	// means no limit.
	MaxSubagents int
	// Approval says which calls need a person (nil: none but forms).
	Approval *ApprovalPolicy

	// Policy are the tool policies that apply to the run: the tools they
	// refuse are left out of what the model is offered (Set.Offered) and
	// refused when called anyway; the chains and agents a call runs
	// inherit them (Restrictions.Nested). Nil allows every tool.
	Policy *policy.Restrictions
	// SessionCalls bounds the tool calls of the run's session per hour.
	SessionCalls SessionCalls
	// Audit receives a record of every call; nil records nothing.
	Audit audit.Sink
	// ParentRunID and SessionKey identify the run in audit records.
	ParentRunID string
	SessionKey  string

	calls     atomic.Int64
	ids       atomic.Int64
	subOnce   sync.Once
	subagents chan struct{}
	repeats   sync.Map // uint64 hash -> *atomic.Int32
	buf       sync.Pool

	// offer is what the model was last offered of the set, for the
	// catalog it was made from (see Set.Offered).
	offerMu sync.Mutex
	offer   *offer
}

// SessionCalls is the per-session hourly tool-call limit
// (limits.ToolCallsPerHour): at most PerHour calls in any hour under Key in
// Store. A zero PerHour is no limit.
type SessionCalls struct {
	Store   limits.Store
	Key     string
	PerHour int
}

// BindValues are the sources of bound parameters.
type BindValues struct {
	Metadata map[string]string
	Vars     map[string]string
	Global   map[string]string
}

// Calls is the number of tool calls made so far in the run.
func (r *Run) Calls() int { return int(r.calls.Load()) }

// nextID makes a unique message id for a tool result.
func (r *Run) nextID() string {
	n := r.ids.Add(1)
	b := make([]byte, 0, len(r.Point.RunID)+12)
	b = append(b, r.Point.RunID...)
	b = append(b, "-tool-"...)
	b = strconv.AppendInt(b, n, 10)
	return string(b)
}

// repeat counts this exact call and reports how many times it was made.
func (r *Run) repeat(name string, args []byte) int {
	h := fnv.New64a()
	h.Write([]byte(name))
	h.Write([]byte{0})
	bp, _ := r.buf.Get().(*bytes.Buffer)
	if bp == nil {
		bp = new(bytes.Buffer)
	}
	bp.Reset()
	if json.Compact(bp, args) == nil {
		h.Write(bp.Bytes())
	} else {
		h.Write(args)
	}
	r.buf.Put(bp)
	v, _ := r.repeats.LoadOrStore(h.Sum64(), new(atomic.Int32))
	return int(v.(*atomic.Int32).Add(1))
}

// AcquireSubagent takes one of the run's sub-agent slots, waiting for one
// while all are busy (or until ctx is done). Call release when the
// sub-agent has finished.
func (r *Run) AcquireSubagent(ctx context.Context) (release func(), err error) {
	if r == nil || r.MaxSubagents <= 0 {
		return func() {}, nil
	}
	r.subOnce.Do(func() { r.subagents = make(chan struct{}, r.MaxSubagents) })
	select {
	case r.subagents <- struct{}{}:
		return func() { <-r.subagents }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
