package agent

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/events"
)

// callAssembler puts a streamed answer's tool calls together from their
// fragments. Providers and gateways differ in what a fragment carries and
// in the order fragments come; a fragment is matched to its call by its
// id where it has one, else by its index, and never by arrival order:
//
//   - index on every fragment, id and name on the first (OpenAI);
//   - the id on every fragment, or only on a later one than the first;
//   - the name late (after argument fragments);
//   - fragments of several calls interleaved;
//   - every call at index 0, told apart by distinct ids (some gateways):
//     a fragment whose id differs from its index's call starts a new
//     call, and a fragment without an id continues the call that index
//     last started;
//   - no index at all: a fragment with a new id starts a call, one without
//     continues the call of the fragment before it;
//   - no ids at all: "call_<n>" is given at the end, n the call's place.
//
// A call's name comes whole in one fragment (it may be repeated on later
// ones); a different name for a call already announced is a broken stream.
// A call is announced (Deltas.ToolCallStart) once its id and name are both
// known, with the argument fragments that came before; fragments of a call
// keep their order. Each call has a key, its place in order of first
// fragment, which Deltas receive and Turn.ToolCalls keep (Turn.keyOf).
type callAssembler struct {
	calls []*pendingCall
	last  *pendingCall // the call of the previous fragment
}

type pendingCall struct {
	key      int
	index    int
	hasIndex bool
	id       string
	name     string
	args     strings.Builder
	started  bool
	pending  []string // argument fragments seen before the announcement
}

// fragment is one element of a delta's tool_calls array. Its args are
// the caller's to keep (Deltas receive them); id and name need not be.
type fragment struct {
	index    int
	hasIndex bool
	id       string
	name     string
	args     string
}

// add takes one fragment, announcing and forwarding to d what it can.
// emitted is set once anything reached d.
func (c *callAssembler) add(f fragment, d Deltas, emitted *bool) error {
	pc := c.match(f)
	if pc == nil {
		pc = &pendingCall{key: len(c.calls), index: f.index, hasIndex: f.hasIndex}
		c.calls = append(c.calls, pc)
	}
	c.last = pc
	// id and name may point into the chunk's buffer: kept ones are cloned.
	if f.id != "" && pc.id == "" {
		pc.id = strings.Clone(f.id)
	}
	if f.name != "" && f.name != pc.name {
		if pc.name != "" {
			return fmt.Errorf("%w: tool call %d is named %q, then %q", ErrStreamBroken, pc.key, pc.name, f.name)
		}
		pc.name = strings.Clone(f.name)
	}
	if !pc.started {
		if f.args != "" {
			pc.pending = append(pc.pending, f.args)
		}
		if pc.id == "" || pc.name == "" {
			return nil
		}
		return c.start(pc, d, emitted)
	}
	if f.args != "" {
		*emitted = true
		kept, err := d.ToolCallArgs(pc.key, f.args)
		if err != nil {
			return received(err)
		}
		pc.args.WriteString(kept)
	}
	return nil
}

// match finds the call a fragment belongs to, or nil for a new call.
func (c *callAssembler) match(f fragment) *pendingCall {
	if f.id != "" {
		for _, pc := range c.calls {
			if pc.id == f.id {
				return pc
			}
		}
	}
	if !f.hasIndex {
		if f.id != "" || c.last == nil {
			return nil
		}
		return c.last
	}
	// The call this index last started: with a new id, only if that call
	// has none yet (its id comes late); otherwise the id starts a call.
	for i := len(c.calls) - 1; i >= 0; i-- {
		pc := c.calls[i]
		if pc.hasIndex && pc.index == f.index {
			if f.id != "" && pc.id != "" {
				return nil
			}
			return pc
		}
	}
	return nil
}

// start announces a call, with the argument fragments that came before.
func (c *callAssembler) start(pc *pendingCall, d Deltas, emitted *bool) error {
	pc.started = true
	*emitted = true
	if err := d.ToolCallStart(pc.key, pc.id, pc.name); err != nil {
		return received(err)
	}
	for _, p := range pc.pending {
		kept, err := d.ToolCallArgs(pc.key, p)
		if err != nil {
			return received(err)
		}
		pc.args.WriteString(kept)
	}
	pc.pending = nil
	return nil
}

// finish completes the calls in index order (calls sharing an index in
// order of first fragment; all of them so when one has no index), giving ids to calls that had
// none, and returns them with their keys.
func (c *callAssembler) finish(d Deltas, emitted *bool) ([]events.ToolCall, []int, error) {
	if len(c.calls) == 0 {
		return nil, nil, nil
	}
	ordered := c.calls
	if !slices.ContainsFunc(c.calls, func(pc *pendingCall) bool { return !pc.hasIndex }) {
		ordered = slices.Clone(c.calls)
		slices.SortStableFunc(ordered, func(a, b *pendingCall) int { return cmp.Compare(a.index, b.index) })
	}
	calls := make([]events.ToolCall, len(ordered))
	var keys []int // nil while each call's key is its place
	for i, pc := range ordered {
		if pc.name == "" {
			return nil, nil, fmt.Errorf("%w: tool call %d has no function name", ErrStreamBroken, pc.key)
		}
		if pc.id == "" {
			// A few servers omit ids; the conversation needs one.
			pc.id = fmt.Sprintf("call_%d", i)
		}
		if !pc.started {
			if err := c.start(pc, d, emitted); err != nil {
				return nil, nil, err
			}
		}
		calls[i] = events.ToolCall{ID: pc.id, Name: pc.name, Arguments: pc.args.String()}
		if pc.key != i && keys == nil {
			keys = make([]int, len(ordered))
			for j := range i {
				keys[j] = j
			}
		}
		if keys != nil {
			keys[i] = pc.key
		}
	}
	return calls, keys, nil
}
