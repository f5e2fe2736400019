package llmtest

import (
	"encoding/json"
	"net/http"
)

// completion is a non-streamed "chat.completion" object.
type completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usageJSON         `json:"usage"`
}

type completionChoice struct {
	Index        int               `json:"index"`
	Message      completionMessage `json:"message"`
	Logprobs     *struct{}         `json:"logprobs"`
	FinishReason string            `json:"finish_reason"`
}

type completionMessage struct {
	Role string `json:"role"`
	// Content is null when the model only calls tools, as the real API does.
	Content          *string        `json:"content"`
	Refusal          *string        `json:"refusal"`
	ToolCalls        []toolCallJSON `json:"tool_calls,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
}

type toolCallJSON struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function toolFunctionJSON `json:"function"`
}

type toolFunctionJSON struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// writeCompletion answers a non-streaming request. The stream-only failure
// modes map to their non-streaming equivalents: ErrorEvent becomes a 500 and
// BreakAfter drops the connection, so a script fails the same way whichever
// mode the client uses.
func (s *Server) writeCompletion(w http.ResponseWriter, r *http.Request, a *answer) {
	if !s.sleep(r.Context(), a.ChunkDelay) {
		s.abortIfClosing()
		return
	}
	if a.BreakAfter > 0 {
		panic(http.ErrAbortHandler)
	}
	if a.ErrorEvent != "" {
		writeError(w, http.StatusInternalServerError, a.ErrorEvent, "")
		return
	}
	msg := completionMessage{Role: "assistant", ReasoningContent: a.Reasoning}
	if a.Text != "" || len(a.ToolCalls) == 0 {
		text := a.Text
		msg.Content = &text
	}
	for _, tc := range a.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, toolCallJSON{ID: tc.ID, Type: "function", Function: toolFunctionJSON{Name: tc.Name, Arguments: tc.Arguments}})
	}
	body, err := json.Marshal(completion{
		ID:      a.id,
		Object:  "chat.completion",
		Created: a.created,
		Model:   a.Model,
		Choices: []completionChoice{{Message: msg, FinishReason: a.FinishReason}},
		Usage:   a.usage.wire(),
	})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "llmtest: encoding the completion: "+err.Error(), "")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(statusOr200(a.Status))
	if a.Stall > 0 {
		// The headers go out, then nothing for the Stall.
		if http.NewResponseController(w).Flush() != nil || !s.sleep(r.Context(), a.Stall) {
			s.abortIfClosing()
			return
		}
	}
	_, _ = w.Write(body)
}

// abortIfClosing drops the connection when the server is shutting down, so a
// client never mistakes an interrupted answer for a complete one.
func (s *Server) abortIfClosing() {
	select {
	case <-s.closing:
		panic(http.ErrAbortHandler)
	default:
	}
}

// statusOr200 honours an explicit 2xx Status (a test may script 201 to see
// how a client copes) and defaults to 200.
func statusOr200(status int) int {
	if status == 0 {
		return http.StatusOK
	}
	return status
}
