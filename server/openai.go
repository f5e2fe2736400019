package server

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/server/completions"
	"github.com/ruleagent/ruleagent/server/idempotency"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/sse"
)

// openaiAPI serves the OpenAI-compatible routes: /v1/chat/completions with
// a chain id as the model, and /v1/models listing the agent chains.
type openaiAPI struct {
	s         *Store
	heartbeat time.Duration
	// activity is the default of showing the agent's tool calls as text.
	activity bool
	// retries answers retried requests from their first attempt.
	retries *retryGuard
}

// chat answers POST /v1/chat/completions.
func (a openaiAPI) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeOpenAIError(w, http.StatusRequestEntityTooLarge, "the request body is larger than the server's limit", "invalid_request_error", "request_too_large")
			return
		}
		writeOpenAIError(w, http.StatusBadRequest, "reading the request body: "+err.Error(), "invalid_request_error", "")
		return
	}
	var req completions.Request
	if err := json.Unmarshal(body, &req); err != nil {
		writeOpenAIError(w, http.StatusBadRequest, "the request body is not valid JSON: "+err.Error(), "invalid_request_error", "")
		return
	}
	switch {
	case req.Model == "":
		writeOpenAIError(w, http.StatusBadRequest, "you must provide a model parameter (a chain id; see GET /v1/models)", "invalid_request_error", "missing_model")
		return
	case len(req.Messages) == 0:
		writeOpenAIError(w, http.StatusBadRequest, "messages must hold at least one message", "invalid_request_error", "missing_messages")
		return
	}
	if _, ok := a.s.Engine(req.Model); !ok {
		writeOpenAIError(w, http.StatusNotFound, "The model `"+req.Model+"` does not exist: no chain with this id is deployed (see GET /v1/models)", "invalid_request_error", "model_not_found")
		return
	}
	msgs, _ := json.Marshal(req.Messages)
	caller := &agent.Caller{}
	for _, t := range req.Tools {
		if t.Type != "" && t.Type != "function" {
			writeOpenAIError(w, http.StatusBadRequest, "only function tools are supported, not "+quote(t.Type), "invalid_request_error", "unsupported_tool_type")
			return
		}
		caller.Tools = append(caller.Tools, agent.ClientTool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	md := map[string]string{}
	for k, v := range req.Metadata {
		md[k] = v
	}
	p := identity.From(r.Context())
	if uid, err := openAIUser(p, req.User, md["userId"]); err != nil {
		writeOpenAIError(w, http.StatusForbidden, err.Error(), "invalid_request_error", "user_mismatch")
		return
	} else if uid != "" {
		md["userId"] = uid
	}
	activity := a.activity
	if req.ToolActivity != nil {
		activity = *req.ToolActivity
	}
	if h := r.Header.Get("X-Ruleagent-Tool-Activity"); h != "" {
		activity = h == "on" || h == "true"
	}
	runReq := RunRequest{ChainID: req.Model, Input: `{"messages":` + string(msgs) + `}`, Metadata: md,
		ThreadID: md["threadId"], RunID: agent.NewID("run-"), Source: "openai", Caller: caller, Owner: p.User}
	id, created := "chatcmpl-"+strings.TrimPrefix(runReq.RunID, "run-"), time.Now().Unix()
	tr := &completions.Translator{ToolActivity: activity}
	runReq.Sink = tr
	entry, first, err := a.retries.begin(r, body)
	switch {
	case errors.Is(err, errBadIdempotencyKey):
		writeOpenAIError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", "invalid_idempotency_key")
		return
	case errors.Is(err, idempotency.ErrMismatch):
		writeOpenAIError(w, http.StatusUnprocessableEntity, "this Idempotency-Key was used with a different request (it answers only its first request's retries): use a new key for a new request",
			"invalid_request_error", "idempotency_key_reused")
		return
	case !first:
		a.retries.replay(w, r, entry, req.Stream, a.heartbeat)
		return
	}
	// keep says whether retries are answered from this attempt: when it
	// succeeded, or failed after tool calls ran.
	keep := false
	if entry != nil {
		defer func() { a.retries.answers.Finish(entry, keep) }()
	}
	if req.Stream {
		hdr := map[string]string{"X-Run-Id": runReq.RunID}
		out := sse.Start(w, a.heartbeat, hdr)
		defer out.Close()
		write := out.Data
		if entry != nil {
			entry.Respond(http.StatusOK, hdr)
			write = func(b []byte) error {
				entry.Frame(b)
				return out.Data(b)
			}
		}
		chunks := &completions.Chunks{ID: id, Created: created, Model: req.Model, Write: write,
			IncludeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
		tr.Out = chunks
		chunks.Start()
		res, err := a.s.Run(r.Context(), runReq)
		if err != nil {
			var typ, code string
			_, typ, code = openAIFailure(res, err)
			msg := failureMessage(res, err)
			if n, names := tr.ToolsRan(); n > 0 {
				_, msg, typ, code = sideEffectFailure(msg, code, n, names)
				keep = true
			}
			chunks.Fail(msg, typ, code)
			return
		}
		if !tr.ClientCalls() && res.Msg.Data != nil && !tr.Wrote() {
			chunks.Content(res.Msg.GetData())
		}
		chunks.Finish(finishReason(tr), usageOf(res))
		keep = true
		return
	}
	msg := &completions.Message{}
	tr.Out = msg
	hdr := map[string]string{"X-Run-Id": runReq.RunID, "Content-Type": "application/json"}
	res, err := a.s.Run(r.Context(), runReq)
	if err != nil {
		status, typ, code := openAIFailure(res, err)
		text := failureMessage(res, err)
		if n, names := tr.ToolsRan(); n > 0 {
			status, text, typ, code = sideEffectFailure(text, code, n, names)
			keep = true
		}
		// A failed agent run is not a transient API hiccup: ask the SDKs
		// not to run it again behind the caller's back.
		hdr["X-Should-Retry"] = "false"
		writeAnswer(w, entry, status, hdr, completions.ErrorJSON(text, typ, code))
		return
	}
	fallback := ""
	if res.Msg.Data != nil {
		fallback = res.Msg.GetData()
	}
	writeAnswer(w, entry, http.StatusOK, hdr, msg.Completion(id, created, req.Model, fallback, finishReason(tr), usageOf(res)))
	keep = true
}

// usageOf is a finished run's OpenAI usage object, with its cost.
func usageOf(res RunResult) completions.Usage {
	u := completions.UsageOf(res.Usage)
	u.Cost, u.Currency = res.Cost, res.Currency
	return u
}

// writeAnswer writes a non-streamed answer, and keeps it in entry (when set)
// for the request's retries.
func writeAnswer(w http.ResponseWriter, entry *idempotency.Entry, status int, hdr map[string]string, body []byte) {
	if entry != nil {
		entry.Respond(status, hdr)
		entry.Frame(body)
	}
	for k, v := range hdr {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// openAIUser is the run's userId: the request's user (else its
// metadata.userId), settled against the caller's verified identity (see
// identity.Claim).
func openAIUser(p identity.Principal, user, metaUser string) (string, error) {
	for _, c := range [...]struct{ field, claimed string }{{`"user"`, user}, {`"metadata.userId"`, metaUser}} {
		if _, err := identity.Claim(p, c.claimed); err != nil {
			return "", fmt.Errorf("%w: %s is %q, but the caller is %q", err, c.field, c.claimed, p.User)
		}
	}
	return identity.Claim(p, cmp.Or(user, metaUser))
}

func finishReason(tr *completions.Translator) string {
	if tr.ClientCalls() {
		return "tool_calls"
	}
	return "stop"
}

func failureMessage(res RunResult, err error) string {
	if res.Error != "" {
		return res.Error
	}
	return err.Error()
}

// openAIFailure maps a failed run to an HTTP status and OpenAI's error
// type and code.
func openAIFailure(res RunResult, err error) (int, string, string) {
	if errors.Is(err, ErrNoChain) {
		return http.StatusNotFound, "invalid_request_error", "model_not_found"
	}
	switch res.ErrorCode {
	case "no_llm":
		return http.StatusServiceUnavailable, "server_error", "no_llm"
	case agent.CodeLLM:
		return http.StatusBadGateway, "api_error", agent.CodeLLM
	case agent.CodeTimeout:
		return http.StatusGatewayTimeout, "timeout", agent.CodeTimeout
	case agent.CodeCancelled:
		return http.StatusServiceUnavailable, "cancelled", agent.CodeCancelled
	case "invalid_input", components.CodeSessionScope, components.CodeSessionModel:
		return http.StatusBadRequest, "invalid_request_error", res.ErrorCode
	case components.CodeSessionBusy:
		return http.StatusConflict, "invalid_request_error", res.ErrorCode
	case components.CodeSessionNotYours:
		return http.StatusForbidden, "invalid_request_error", res.ErrorCode
	}
	return http.StatusInternalServerError, "server_error", res.ErrorCode
}

// models answers GET /v1/models: the agent chains.
func (a openaiAPI) models(w http.ResponseWriter, _ *http.Request) {
	data := []map[string]any{}
	for _, c := range a.s.List() {
		if c.IsAgent && !c.Disabled {
			data = append(data, modelObject(c.ID, a.s.onDemoModel(c.ID)))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// model answers GET /v1/models/{model}.
func (a openaiAPI) model(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("model")
	if _, ok := a.s.Engine(id); !ok {
		writeOpenAIError(w, http.StatusNotFound, "The model `"+id+"` does not exist", "invalid_request_error", "model_not_found")
		return
	}
	writeJSON(w, http.StatusOK, modelObject(id, a.s.onDemoModel(id)))
}

// modelObject describes a chain as a model; owned_by says when its agents
// answer from the built-in demo model.
func modelObject(id string, onDemo bool) map[string]any {
	owner := "ruleagent"
	if onDemo {
		owner = ownedByDemo
	}
	return map[string]any{"id": id, "object": "model", "created": 0, "owned_by": owner}
}

// writeOpenAIError answers with OpenAI's error JSON, which the OpenAI SDKs
// turn into their usual exceptions (NotFoundError for 404, ...).
func writeOpenAIError(w http.ResponseWriter, status int, message, typ, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(completions.ErrorJSON(message, typ, code))
}
