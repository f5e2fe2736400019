package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// apiError is the error body of the /api/v1 routes.
type apiError struct {
	Error    string    `json:"error"`
	Problems []Problem `json:"problems,omitempty"`
	Warnings []Problem `json:"warnings,omitempty"`
}

// writeError answers with {"error": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, apiError{Error: msg})
}

// readJSON decodes the request body into v, answering 400 (or 413 for a
// body over the limit) and returning false when it cannot.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "the request body is larger than the server's limit")
			return false
		}
		writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, "the request body is not valid JSON: "+err.Error())
		return false
	}
	return true
}

// readBody reads the whole request body, answering 413 or 400 when it
// cannot.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "the request body is larger than the server's limit")
		} else {
			writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		return nil, false
	}
	return body, true
}

// wantsStream reports whether the client asked for an event stream.
func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// isOpenAIPath reports whether path belongs to the OpenAI-compatible API,
// whose errors take OpenAI's shape.
func isOpenAIPath(path string) bool { return strings.HasPrefix(path, "/v1/") }
