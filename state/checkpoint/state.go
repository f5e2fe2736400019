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
// (server/run_state.go) and resumes the run from it: it checks and takes
// the answers against Pending, re-enters the chain at NodeID with Run (the
// paused chain run: the message the node had received and each agent
// loop's suspended state, a sub-agent's inside its parent's waiting call,
// encoded by package components and opaque here), and opens again in the
// resumed run's stream what the pause closed (Suspended) and what happened
// while no client was attached (Held).
type State struct {
	Version  int    `json:"v"`
	RunID    string `json:"runId"`
	ThreadID string `json:"threadId,omitempty"`
	// ChainID is the chain the run started on, NodeID its ai/agent node
	// the run paused in. The run goes on with the version deployed when
	// it is resumed.
	ChainID string `json:"chainId"`
	NodeID  string `json:"nodeId"`
	// Source is where the run came from (run, agui, openai, mcp).
	Source string `json:"source,omitempty"`
	// Owner is the verified user who started the run ("" for the
	// operator, and where nobody is verified): only they, or the
	// operator, may answer it; NewThread says the server made ThreadID up.
	Owner     string `json:"owner,omitempty"`
	NewThread bool   `json:"newThread,omitempty"`
	// Caller is the application's part of the run (agent.Caller): its
	// front-end tools, context and state.
	Caller *Caller `json:"caller,omitempty"`
	// Run is the paused chain run (components.Suspension, JSON).
	Run json.RawMessage `json:"run"`
	// Pending are the interrupts the run waits for.
	Pending []Pending `json:"pending"`
	// Always are the calls approved "always" on the thread, for the
	// caller who started it.
	Always []Always `json:"always,omitempty"`
	// Usage is what the run has spent so far, sub-agents included.
	Usage []events.TokenUsage `json:"usage,omitempty"`
	// Suspended is what the pause closed in the run's stream (steps and
	// sub-agents, as the events that opened them): the resumed stream
	// opens them again. Held are the events of a part of the run no
	// client saw (it went on without one: an interrupt expired), sent to
	// the next client after them.
	Suspended []Event `json:"suspended,omitempty"`
	Held      []Event `json:"held,omitempty"`
	// Traceparent and Tracestate are the W3C trace context of the paused
	// segment's run span (empty with tracing off, and in checkpoints of
	// releases before them): the resumed segment continues its trace, or
	// links to it (telemetry.ResumeUnder).
	Traceparent string    `json:"traceparent,omitempty"`
	Tracestate  string    `json:"tracestate,omitempty"`
	StartedAt   time.Time `json:"startedAt"`
	PausedAt    time.Time `json:"pausedAt"`
}

// Event is an events.Event as a checkpoint keeps it: every field, by its
// Go name (events.Event's own JSON is the AG-UI wire form, which leaves
// out what AG-UI has no field for, its metadata included).
type Event events.Event

// UnmarshalJSON implements json.Unmarshaler: raw JSON fields that were
// not set stay unset (not a JSON null).
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return err
	}
	for _, f := range []*json.RawMessage{&e.Value, &e.Result, &e.Activity, &e.Patch} {
		if string(*f) == "null" {
			*f = nil
		}
	}
	return nil
}

// Events converts events for a State.
func Events(evs []events.Event) []Event {
	out := make([]Event, len(evs))
	for i, e := range evs {
		out[i] = Event(e)
	}
	return out
}

// AsEvents converts a State's events back.
func AsEvents(evs []Event) []events.Event {
	out := make([]events.Event, len(evs))
	for i, e := range evs {
		out[i] = events.Event(e)
	}
	return out
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

// Pending is an interrupt the run waits for: the call it is about, and
// what an answer to it is checked against.
type Pending struct {
	// Interrupt is the interrupt as clients saw it (its toolCallId is a
	// sub-agent's call as the client saw it).
	Interrupt events.Interrupt `json:"interrupt"`
	// RunID and ToolCallID are the call in the run of the agent that
	// made it (a sub-agent's own).
	RunID      string `json:"runId"`
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
	// Timeout is how long the call waits, and Expires when: nobody's
	// answer by then is a denial.
	Timeout time.Duration `json:"timeout"`
	Expires time.Time     `json:"expires"`
}

// Always is a call approved "always", until Expires.
type Always struct {
	Key     string    `json:"key"`
	Expires time.Time `json:"expires"`
}

// ErrInvalidState refuses a State that cannot be resumed.
var ErrInvalidState = errors.New("invalid checkpoint state")

// Check reports what makes s impossible to resume. (The paused chain run
// in Run is checked by whoever resumes it: package components and the
// agent engine.)
func (s *State) Check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidState, fmt.Sprintf(format, a...))
	}
	switch {
	case s.Version != FormatVersion:
		return bad("format version %d, want %d", s.Version, FormatVersion)
	case s.RunID == "" || s.ChainID == "" || s.NodeID == "":
		return bad("runId, chainId and nodeId are required")
	case len(s.Run) == 0 || string(s.Run) == "null":
		return bad("no paused run: nothing to resume")
	case len(s.Pending) == 0:
		return bad("no pending call: nothing waits for an answer")
	}
	ids := map[string]bool{}
	for i, p := range s.Pending {
		if p.Interrupt.ID == "" || ids[p.Interrupt.ID] {
			return bad("pending[%d]: interrupt id %q is empty or repeated", i, p.Interrupt.ID)
		}
		if p.RunID == "" || p.ToolCallID == "" || p.Tool == "" {
			return bad("pending[%d]: the call's run, id and tool are required", i)
		}
		ids[p.Interrupt.ID] = true
	}
	return nil
}

// Find returns the pending interrupt id, or nil.
func (s *State) Find(id string) *Pending {
	for i := range s.Pending {
		if s.Pending[i].Interrupt.ID == id {
			return &s.Pending[i]
		}
	}
	return nil
}

// Open is the pending interrupt id of a paused run that may still be
// answered (it has not expired), or nil; s may be nil.
func (s *State) Open(id string) *Pending {
	if s == nil {
		return nil
	}
	if p := s.Find(id); p != nil && time.Now().Before(p.Expires) {
		return p
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
