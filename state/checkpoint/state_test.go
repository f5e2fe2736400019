package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/events"
)

// paused is a run paused inside a sub-agent: its send_email call waits
// for approval.
func paused() *State {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	return &State{Version: FormatVersion, RunID: "run-1", ThreadID: "t-1", ChainID: "assistant", NodeID: "agent", Source: "agui",
		Owner: "alice", Caller: &Caller{Tools: []CallerTool{{Name: "pick_date", Parameters: json.RawMessage(`{"type":"object"}`)}}},
		Run: json.RawMessage(`{"chainId":"assistant","nodeId":"agent"}`),
		Pending: []Pending{{RunID: "sub-1", ToolCallID: "s1", Tool: "send_email", ToolType: "rulechain", Args: json.RawMessage(`{"to":"bob"}`),
			Key: "send_email\x00{\"to\":\"bob\"}", Timeout: 10 * time.Minute, Expires: at.Add(10 * time.Minute),
			Interrupt: events.Interrupt{ID: "int-1", Reason: "tool_approval", ToolCallID: "sub-1:s1", SubagentRunID: "sub-1"}}},
		Always: []Always{{Key: "lookup\x00{}", Expires: at.Add(24 * time.Hour)}},
		Usage:  []events.TokenUsage{{Model: "m", InputTokens: 10, OutputTokens: 5, TotalTokens: 15}},
		Suspended: []Event{{Type: events.SubagentStarted, SubagentRunID: "sub-1", Name: "research"},
			{Type: events.StepStarted, StepName: "Agent", Meta: events.Meta{ToolCallID: "c1", NodeID: "agent", ChainID: "research"}}},
		Held:      []Event{{Type: events.StepStarted, StepName: "turn 2", Meta: events.Meta{Step: 2}}},
		StartedAt: at, PausedAt: at.Add(time.Minute),
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "k=v",
	}
}

// A checkpoint saved before the paused segment's trace context was kept
// decodes, without one (its resumed segment starts as before).
func TestStateWithoutTraceContextDecodes(t *testing.T) {
	s := paused()
	s.Traceparent, s.Tracestate = "", ""
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("traceparent")) {
		t.Fatalf("an empty trace context is written: %s", b)
	}
	got, err := Decode(b)
	if err != nil || got.Traceparent != "" || got.RunID != "run-1" {
		t.Fatalf("decode: %+v %v", got, err)
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
	if p := got.Find("int-1"); p == nil || p.Tool != "send_email" || got.Find("int-2") != nil {
		t.Errorf("find: %+v", p)
	}
}

// A state that cannot be resumed is refused at Encode (the pause fails
// loudly, not the resume) and at Decode.
func TestStateCheck(t *testing.T) {
	for name, spoil := range map[string]func(s *State){
		"another format":        func(s *State) { s.Version = 2 },
		"no node":               func(s *State) { s.NodeID = "" },
		"no paused run":         func(s *State) { s.Run = nil },
		"nothing pending":       func(s *State) { s.Pending = nil },
		"a call without its id": func(s *State) { s.Pending[0].ToolCallID = "" },
		"a repeated interrupt":  func(s *State) { s.Pending = append(s.Pending, s.Pending[0]) },
		"an unnamed interrupt":  func(s *State) { s.Pending[0].Interrupt.ID = "" },
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
