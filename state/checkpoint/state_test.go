package checkpoint

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/events"
)

// paused is a run paused inside a sub-agent: the agent called lookup
// (done) and research (a sub-agent); the sub-agent called send_email,
// which waits for approval, and search (done).
func paused() *State {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	return &State{Version: FormatVersion, RunID: "run-1", ThreadID: "t-1", ChainID: "assistant", ChainVersion: 3,
		ChainHash: "ab12", NodeID: "agent", Source: "agui", Metadata: map[string]string{"userId": "alice"},
		Identity: json.RawMessage(`{"sub":"alice"}`),
		Caller:   &Caller{Tools: []CallerTool{{Name: "pick_date", Parameters: json.RawMessage(`{"type":"object"}`)}}},
		Frames: []Frame{
			{RunID: "run-1", NodeID: "agent", Step: 2, ToolCalls: 3, SessionID: "assistant:thread:t-1", SessionVersion: 4,
				Messages: []events.Message{
					{Role: events.RoleUser, Content: "Mail Bob the report"},
					{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{}`}, {ID: "c2", Name: "research", Arguments: `{}`}}},
				},
				Results: []events.Message{{Role: events.RoleTool, ToolCallID: "c1", Content: "found"}}},
			{RunID: "sub-1", ChainID: "researcher", NodeID: "agent", ParentToolCallID: "c2", Step: 1,
				Messages: []events.Message{
					{Role: events.RoleUser, Content: "research"},
					{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{{ID: "s1", Name: "send_email", Arguments: `{"to":"bob"}`}, {ID: "s2", Name: "search", Arguments: `{}`}}},
				},
				Results: []events.Message{{Role: events.RoleTool, ToolCallID: "s2", Content: "3 hits"}}},
		},
		Pending: []Pending{{Frame: 1, ToolCallID: "s1", Tool: "send_email", ToolType: "rulechain", Args: json.RawMessage(`{"to":"bob"}`),
			Key: "send_email\x00{\"to\":\"bob\"}", Expires: at.Add(10 * time.Minute),
			Interrupt: events.Interrupt{ID: "int-1", Reason: "tool_approval", ToolCallID: "sub-1:s1", SubagentRunID: "sub-1"}}},
		Usage:       []events.TokenUsage{{Model: "m", InputTokens: 10, OutputTokens: 5, TotalTokens: 15}},
		Suspended:   []events.Event{{Type: events.SubagentStarted, SubagentRunID: "sub-1", Name: "research"}},
		LastEventID: 57, StartedAt: at, PausedAt: at.Add(time.Minute),
	}
}

func TestStateRoundTrip(t *testing.T) {
	s := paused()
	b, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, s)
	}
}

// A state that cannot be resumed is refused at Encode (the pause fails
// loudly, not the resume) and at Decode.
func TestStateCheck(t *testing.T) {
	for name, spoil := range map[string]func(s *State){
		"another format":             func(s *State) { s.Version = 2 },
		"no node":                    func(s *State) { s.NodeID = "" },
		"no frame":                   func(s *State) { s.Frames = nil },
		"nothing pending":            func(s *State) { s.Pending = nil },
		"a pending call nobody made": func(s *State) { s.Pending[0].ToolCallID = "s9" },
		"a call with no outcome":     func(s *State) { s.Frames[1].Results = nil },
		"a call with two outcomes": func(s *State) {
			s.Frames[1].Results = append(s.Frames[1].Results, events.Message{Role: events.RoleTool, ToolCallID: "s1"})
		},
		"a sub-agent in no call":    func(s *State) { s.Frames[1].ParentToolCallID = "c9" },
		"a sub-agent frame unnamed": func(s *State) { s.Frames[1].ParentToolCallID = "" },
		"a turn without calls": func(s *State) {
			s.Frames[0].Messages = s.Frames[0].Messages[:1]
		},
		"a repeated interrupt":         func(s *State) { s.Pending = append(s.Pending, s.Pending[0]) },
		"a pending frame out of range": func(s *State) { s.Pending[0].Frame = 5 },
	} {
		s := paused()
		spoil(s)
		if _, err := Encode(s); !errors.Is(err, ErrInvalidState) {
			t.Errorf("%s: encode %v", name, err)
		}
		b, _ := json.Marshal(s)
		if _, err := Decode(b); !errors.Is(err, ErrInvalidState) {
			t.Errorf("%s: decode %v", name, err)
		}
	}
}
