package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ruleagent/ruleagent/events"
)

// FormatVersion is the version of State's encoding; Decode refuses
// others (a replica of an older release must not resume a run it does not
// understand).
const FormatVersion = 1

// State is what a paused run needs to go on, on any replica: the blob a
// Checkpoint holds (Encode, Decode). The server builds it at the pause
// from the run's state (server/run_state.go, interrupts.go) and the
// engine's (agent: the loop's messages, its step and counters), and
// resumes the run from it: it re-enters the agent node at NodeID of the
// chain at ChainID (the same version: ChainHash), rebuilds each agent loop
// from its Frame, answers the Pending calls, and continues the run's event
// log after LastEventID.
//
// A run is checkpointed only when every tool call of its current turns
// has either a result (Frame.Results) or an open interrupt (Pending), or
// runs a sub-agent whose frame follows: Check enforces it. Calls still
// running cannot be checkpointed; the server waits for them (or lets them
// end) before it saves.
type State struct {
	Version  int    `json:"v"`
	RunID    string `json:"runId"`
	ThreadID string `json:"threadId,omitempty"`
	// ChainID, ChainVersion and ChainHash name the chain and the version
	// the run started on (package chainsync): a resumer whose deployed
	// version differs refuses the resume, or says it resumes on another
	// version.
	ChainID      string `json:"chainId"`
	ChainVersion int64  `json:"chainVersion,omitempty"`
	ChainHash    string `json:"chainHash,omitempty"`
	// NodeID is the chain's ai/agent node the run paused in.
	NodeID string `json:"nodeId"`
	// Source is where the run came from (api, agui, openai, mcp).
	Source string `json:"source,omitempty"`
	// Metadata is the message metadata the chain got (userId, session
	// keys, ...): the resumed node reads it as the original did.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Identity is the caller as the server's authentication recorded it
	// (opaque here): whoever answers must be allowed to, and the resumed
	// run acts for the same caller.
	Identity json.RawMessage `json:"identity,omitempty"`
	// Caller is the application's part of the run (agent.Caller): its
	// front-end tools, context and state.
	Caller *Caller `json:"caller,omitempty"`
	// Frames are the agent loops in progress, outermost first: [0] is the
	// agent node's run, each next one a sub-agent running inside a tool
	// call of the frame before it (Frame.ParentToolCallID).
	Frames []Frame `json:"frames"`
	// Pending are the calls that wait for an answer.
	Pending []Pending `json:"pending"`
	// Always are the call keys approved "always" on the thread so far.
	Always []string `json:"always,omitempty"`
	// Usage is what the run has spent so far, sub-agents included.
	Usage []events.TokenUsage `json:"usage,omitempty"`
	// Suspended is what the pause closed in the run's stream
	// (events.Stream.Suspended): the resumed stream reopens it.
	Suspended []events.Event `json:"suspended,omitempty"`
	// LastEventID is the run's last event id in its event log.
	LastEventID uint64    `json:"lastEventId"`
	StartedAt   time.Time `json:"startedAt"`
	PausedAt    time.Time `json:"pausedAt"`
}

// Caller is agent.Caller as stored.
type Caller struct {
	Tools   []CallerTool    `json:"tools,omitempty"`
	Context []CallerContext `json:"context,omitempty"`
	State   json.RawMessage `json:"state,omitempty"`
}

// CallerTool is a front-end tool (agent.ClientTool).
type CallerTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// CallerContext is a context entry (agent.ContextEntry).
type CallerContext struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// Frame is one agent loop at the pause.
type Frame struct {
	// RunID is the agent's run id (a sub-agent's own).
	RunID   string `json:"runId"`
	ChainID string `json:"chainId,omitempty"`
	NodeID  string `json:"nodeId,omitempty"`
	// ParentToolCallID is the call of the frame before this one that runs
	// this sub-agent ("" for frame 0).
	ParentToolCallID string `json:"parentToolCallId,omitempty"`
	// Step is the LLM turn in progress (1-based).
	Step int `json:"step"`
	// Messages is the conversation the loop runs on, ending with the
	// assistant message whose tool calls are in flight.
	Messages []events.Message `json:"messages"`
	// Results are the tool messages of this turn already produced.
	Results []events.Message `json:"results,omitempty"`
	// ToolCalls counts the calls made so far (the maxToolCalls limit).
	ToolCalls int `json:"toolCalls,omitempty"`
	// SessionID and SessionVersion are the session the loop's
	// conversation holds and the version it read: the resumer takes the
	// session's lease again, and the turn's write is a compare-and-swap on
	// that version (a session changed meanwhile fails the resume).
	SessionID      string `json:"sessionId,omitempty"`
	SessionVersion int64  `json:"sessionVersion,omitempty"`
}

// Pending is a call waiting for an answer.
type Pending struct {
	Interrupt events.Interrupt `json:"interrupt"`
	// Frame is the index of the frame whose call waits; ToolCallID the
	// call's id in that frame (not the client's prefixed one).
	Frame      int    `json:"frame"`
	ToolCallID string `json:"toolCallId"`
	Tool       string `json:"tool"`
	ToolType   string `json:"toolType,omitempty"`
	// Args are the model's arguments; Commands a bash call's parsed
	// commands (what an approval approves).
	Args     json.RawMessage `json:"args,omitempty"`
	Commands []string        `json:"commands,omitempty"`
	// ResponseSchema is set for a form: the answer is the call's result.
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	// Key is what approving it "always" remembers.
	Key string `json:"key,omitempty"`
	// Expires is when nobody's answer is a denial.
	Expires time.Time `json:"expires"`
}

// ErrInvalidState refuses a State that cannot be resumed.
var ErrInvalidState = errors.New("invalid checkpoint state")

// Check reports what makes s impossible to resume.
func (s *State) Check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidState, fmt.Sprintf(format, a...))
	}
	switch {
	case s.Version != FormatVersion:
		return bad("format version %d, want %d", s.Version, FormatVersion)
	case s.RunID == "" || s.ChainID == "" || s.NodeID == "":
		return bad("runId, chainId and nodeId are required")
	case len(s.Frames) == 0:
		return bad("no frame: nothing to resume")
	case len(s.Pending) == 0:
		return bad("no pending call: nothing waits for an answer")
	}
	waiting := map[[2]string]bool{}
	ids := map[string]bool{}
	for i, p := range s.Pending {
		if p.Frame < 0 || p.Frame >= len(s.Frames) {
			return bad("pending[%d]: frame %d does not exist", i, p.Frame)
		}
		if p.Interrupt.ID == "" || ids[p.Interrupt.ID] {
			return bad("pending[%d]: interrupt id %q is empty or repeated", i, p.Interrupt.ID)
		}
		ids[p.Interrupt.ID] = true
		waiting[[2]string{s.Frames[p.Frame].RunID, p.ToolCallID}] = true
	}
	for i := range s.Frames {
		if err := s.checkFrame(i, waiting); err != nil {
			return bad("frames[%d]: %v", i, err)
		}
	}
	for k := range waiting {
		return bad("a pending call %s of run %s is not a call of its frame's turn", k[1], k[0])
	}
	return nil
}

// checkFrame checks that every call of frame i's turn has exactly one
// outcome: a result, a pending answer, or the next frame's sub-agent. It
// removes the frame's calls from waiting.
func (s *State) checkFrame(i int, waiting map[[2]string]bool) error {
	f := &s.Frames[i]
	if f.RunID == "" || len(f.Messages) == 0 {
		return errors.New("runId and messages are required")
	}
	last := f.Messages[len(f.Messages)-1]
	if last.Role != events.RoleAssistant || len(last.ToolCalls) == 0 {
		return errors.New("the last message must be the assistant's, with the turn's tool calls")
	}
	if i > 0 && f.ParentToolCallID == "" {
		return errors.New("a sub-agent's frame needs parentToolCallId")
	}
	results := map[string]int{}
	for _, r := range f.Results {
		if r.Role != events.RoleTool {
			return fmt.Errorf("result %q is not a tool message", r.ToolCallID)
		}
		results[r.ToolCallID]++
	}
	sub := ""
	if i+1 < len(s.Frames) {
		sub = s.Frames[i+1].ParentToolCallID
	}
	for _, c := range last.ToolCalls {
		n := results[c.ID]
		delete(results, c.ID)
		key := [2]string{f.RunID, c.ID}
		if waiting[key] {
			n++
			delete(waiting, key)
		}
		if c.ID == sub {
			n++
			sub = ""
		}
		if n != 1 {
			return fmt.Errorf("call %s has %d outcomes (a result, a pending answer or a sub-agent), want exactly 1", c.ID, n)
		}
	}
	for id := range results {
		return fmt.Errorf("result for %q, which is not a call of the turn", id)
	}
	if sub != "" {
		return fmt.Errorf("the next frame runs in call %q, which is not a call of the turn", sub)
	}
	return nil
}

// Encode checks s and encodes it.
func Encode(s *State) ([]byte, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// Decode decodes and checks a State.
func Decode(b []byte) (*State, error) {
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidState, err)
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return &s, nil
}
