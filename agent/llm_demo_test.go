package agent

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/demo"
	"github.com/ruleagent/ruleagent/events"
)

// recordDeltas keeps what a streamed turn delivered.
type recordDeltas struct {
	text, reasoning strings.Builder
	textChunks      int
	calls           []string
}

func (r *recordDeltas) Text(d string) (string, error) {
	r.text.WriteString(d)
	r.textChunks++
	return d, nil
}
func (r *recordDeltas) Reasoning(d string) (string, error) {
	r.reasoning.WriteString(d)
	return d, nil
}
func (r *recordDeltas) ToolCallStart(_ int, _ string, name string) error {
	r.calls = append(r.calls, name)
	return nil
}
func (r *recordDeltas) ToolCallArgs(_ int, d string) (string, error) { return d, nil }

type noNetwork struct{}

func (noNetwork) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("the network was used")
}

// The demo model's reserved URL is answered in process, whatever HTTP
// client the configuration gives: its host never resolves.
func TestDemoURLIsAnsweredInProcess(t *testing.T) {
	c, err := NewClient(LLMConfig{Endpoints: []Endpoint{{URL: demo.URL, Model: demo.Model}},
		HTTPClient: &http.Client{Transport: noNetwork{}}})
	if err != nil {
		t.Fatal(err)
	}
	tools := []byte(`[{"type":"function","function":{"name":"get_order_status","description":"Look up an order by its id.",` +
		`"parameters":{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]}}}]`)
	for _, stream := range []bool{true, false} {
		var d recordDeltas
		turn, err := c.Complete(context.Background(), &Request{Messages: []events.Message{{Role: events.RoleUser, Content: "Where is my order A-1001?"}}, Tools: tools}, stream, &d, nil)
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if turn.Model != demo.Model || turn.Provider != demo.Host {
			t.Errorf("stream=%v: model %q provider %q", stream, turn.Model, turn.Provider)
		}
		if !strings.HasPrefix(turn.Content, demo.Marker) || turn.Reasoning == "" {
			t.Errorf("stream=%v: content %q reasoning %q", stream, turn.Content, turn.Reasoning)
		}
		if len(turn.ToolCalls) != 1 || turn.ToolCalls[0].Name != "get_order_status" || turn.ToolCalls[0].Arguments != `{"orderId":"A-1001"}` {
			t.Errorf("stream=%v: calls %+v", stream, turn.ToolCalls)
		}
		if turn.Usage.TotalTokens == 0 {
			t.Errorf("stream=%v: no usage", stream)
		}
		if stream && (d.textChunks < 3 || d.text.String() != turn.Content || len(d.calls) != 1) {
			t.Errorf("streamed %d text chunks %q, calls %v", d.textChunks, d.text.String(), d.calls)
		}
	}
}
