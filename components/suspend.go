package components

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/tools"
)

// A chain run pauses when an agent node's run suspends (its calls wait for
// answers: see agent.SuspendedError). The node then tells RelSuspended,
// which no connection takes: its branch ends, the nodes after it do not
// run, and the chain run ends with its Suspension (ChainRun.Suspended)
// instead of an end. The thread's session lease is given back.
//
// Whoever started the chain run keeps the Suspension (the server in a
// checkpoint; a chain tool in the PauseError of its call, so that the
// calling agent's run suspends too, holding it) and resumes it with
// ChainRunOptions.Resume: the chain is entered at the agent node
// (types.WithStartNode) with the message it had received, and the node
// resumes its run instead of starting one; the rest of the chain then
// runs as usual.

// RelSuspended is the relation an agent node tells when its run paused.
const RelSuspended = "ruleagent.suspended"

// Suspension is a chain run paused in one of its agent nodes.
type Suspension struct {
	ChainID string `json:"chainId"`
	NodeID  string `json:"nodeId"`
	// Msg is the message the node received.
	Msg StoredMsg `json:"msg"`
	// Agent is the node's suspended run.
	Agent *agent.Suspension `json:"agent"`
	// Session is the node's conversation, when it keeps one.
	Session *sessions.Snapshot `json:"session,omitempty"`
	// Step is the name of the node's step left open (a chain tool's nodes
	// are steps of its call): the resumed node goes on in it.
	Step string `json:"step,omitempty"`
}

// StoredMsg is a RuleGo message as a suspension keeps it.
type StoredMsg struct {
	ID       string            `json:"id,omitempty"`
	Ts       int64             `json:"ts,omitempty"`
	Type     string            `json:"type"`
	DataType string            `json:"dataType"`
	Data     string            `json:"data"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// StoreMsg is m as a suspension keeps it.
func StoreMsg(m types.RuleMsg) StoredMsg { return storeMsg(m) }

func storeMsg(m types.RuleMsg) StoredMsg {
	s := StoredMsg{ID: m.Id, Ts: m.Ts, Type: m.Type, DataType: string(m.DataType), Data: m.GetData()}
	if m.Metadata != nil {
		s.Metadata = m.Metadata.Values()
	}
	return s
}

// Message is the message the paused node had received.
func (s *Suspension) Message() types.RuleMsg { return s.Msg.Message() }

// Message is the kept message as RuleGo's.
func (s StoredMsg) Message() types.RuleMsg {
	md := types.NewMetadata()
	for k, v := range s.Metadata {
		md.PutValue(k, v)
	}
	m := types.NewMsg(s.Ts, s.Type, types.DataType(s.DataType), md, s.Data)
	if s.ID != "" {
		m.Id = s.ID
	}
	return m
}

// Interrupts returns the interrupts the paused run waits for, those of
// the sub-agents paused inside its calls included.
func (s *Suspension) Interrupts() ([]string, error) {
	if s.Agent == nil {
		return nil, errors.New("a suspension without its agent's run")
	}
	ids, chains := s.Agent.Waiting()
	for _, cp := range chains {
		inner, err := DecodeSuspension(cp.State)
		if err != nil {
			return nil, err
		}
		more, err := inner.Interrupts()
		if err != nil {
			return nil, err
		}
		ids = append(ids, more...)
	}
	return ids, nil
}

// DecodeSuspension reads a suspension encoded with json.Marshal.
func DecodeSuspension(b []byte) (*Suspension, error) {
	var s Suspension
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("a paused chain run: %w", err)
	}
	if s.ChainID == "" || s.NodeID == "" || s.Agent == nil {
		return nil, errors.New("a paused chain run without its chain, node or agent run")
	}
	if err := s.Agent.Check(); err != nil {
		return nil, err
	}
	return &s, nil
}

// ErrManyPauses fails a chain run two of whose agent nodes paused at once
// (parallel branches): a run can pause in one node at a time.
var ErrManyPauses = errors.New("two agent nodes of the chain paused at once; a run can pause in one agent node at a time")

// pauses collects the suspensions of a chain run's nodes.
type pauses struct {
	mu   sync.Mutex
	list []*Suspension
}

type pausesKey struct{}

func (p *pauses) add(s *Suspension) {
	p.mu.Lock()
	p.list = append(p.list, s)
	p.mu.Unlock()
}

func pausesFrom(ctx context.Context) *pauses {
	p, _ := ctx.Value(pausesKey{}).(*pauses)
	return p
}

// Suspended returns the chain run's suspension, nil when no node paused
// (ErrManyPauses when more than one did). Final once Done is closed.
func (r *ChainRun) Suspended() (*Suspension, error) {
	r.pauses.mu.Lock()
	defer r.pauses.mu.Unlock()
	switch len(r.pauses.list) {
	case 0:
		return nil, nil
	case 1:
		return r.pauses.list[0], nil
	}
	return nil, ErrManyPauses
}

// resumeMark is the suspension a chain run resumes, taken once by its
// node.
type resumeMark struct {
	s    *Suspension
	used atomic.Bool
}

type resumeKey struct{}

// resuming returns the suspension ctx resumes for node nodeID of chain
// chainID, without taking it.
func resuming(ctx context.Context, chainID, nodeID string) *Suspension {
	m, _ := ctx.Value(resumeKey{}).(*resumeMark)
	if m == nil || m.used.Load() || m.s.ChainID != chainID || m.s.NodeID != nodeID {
		return nil
	}
	return m.s
}

// takeResume takes the suspension ctx resumes for the node, once: the
// node resumes its run the first time the resumed chain run reaches it.
func takeResume(ctx context.Context, chainID, nodeID string) *Suspension {
	m, _ := ctx.Value(resumeKey{}).(*resumeMark)
	if m == nil || m.s.ChainID != chainID || m.s.NodeID != nodeID || !m.used.CompareAndSwap(false, true) {
		return nil
	}
	return m.s
}

// suspend reports the node's suspended run to its chain run, gives its
// session back and ends its branch. It reports whether the chain run can
// pause (it always can when started through ChainRun).
func (n *AgentNode) suspend(ctx types.RuleContext, goctx context.Context, msg types.RuleMsg, se *agent.SuspendedError, conv *sessions.Conversation) bool {
	p := pausesFrom(goctx)
	if p == nil {
		return false
	}
	s := &Suspension{ChainID: n.chainID, NodeID: n.nodeID, Msg: storeMsg(msg), Agent: se.Suspension}
	if conv != nil {
		s.Session = conv.Snapshot()
		conv.Release()
	}
	if rec := stepsFrom(ctx.GetContext()); rec != nil {
		if v, ok := rec.open.Load(ctx); ok {
			s.Step = v.(*openStep).name
		}
	}
	p.add(s)
	ctx.TellNext(msg, RelSuspended)
	return true
}

// chainPause is the PauseError of a chain tool's call whose chain run
// paused.
func chainPause(s *Suspension) error {
	b, err := json.Marshal(s)
	if err != nil {
		return tools.Wrap(tools.ErrExecutionFailed, err, "the paused chain %s cannot be kept", s.ChainID)
	}
	return &tools.PauseError{Chain: &tools.ChainPause{RunID: s.Agent.RunID, State: b}}
}

// openSession begins the run's hold on its session, or takes a paused
// run's again (nil without one). A paused run that cannot have its session
// back ends its open stream (a sub-agent's, opened again by the resumed
// run) with the error.
func (n *AgentNode) openSession(ctx context.Context, resume *Suspension, md map[string]string, msgs []events.Message, runID string,
	sink events.Sink) (*sessions.Conversation, *agent.Client, error) {
	if resume == nil {
		return n.beginSession(ctx, md, msgs, runID)
	}
	conv, llm, err := n.resumeSession(ctx, resume.Session, runID)
	if err != nil {
		failResumed(sink, resume, n.scrubber.Scrub(err.Error()), err)
	}
	return conv, llm, err
}

// runOrResume runs the agent on in, or resumes its paused run.
func (n *AgentNode) runOrResume(ctx context.Context, in agent.Input, resume *Suspension, sink events.Sink) (*agent.Output, error) {
	if resume != nil {
		return n.agent.Resume(ctx, in, resume.Agent, sink)
	}
	return n.agent.Run(ctx, in, sink)
}

// failResumed ends a resumed run that could not go on with its error.
func failResumed(sink events.Sink, s *Suspension, message string, err error) {
	code := agent.CodeInternal
	var re *agent.RunError
	if errors.As(err, &re) {
		code = re.Code
	}
	events.NewStream(sink, s.Agent.ThreadID, s.Agent.RunID).Emit(events.Event{Type: events.RunError, Message: message, Code: code})
}
