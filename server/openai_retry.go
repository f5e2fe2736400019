package server

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/server/completions"
	"github.com/ruleagent/ruleagent/server/idempotency"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/sse"
)

// An OpenAI SDK retries a request that failed with 408, 409, 429 or a 5xx,
// or whose connection broke or timed out (the openai SDKs twice, the AI
// SDK three times, LangChain six times; only the openai SDKs obey
// X-Should-Retry). For an agent a retry is a new run, its tool calls
// included. So /v1/chat/completions answers a retry from the first
// attempt instead of running it again (see README, "Retries"):
//
//   - a request with an Idempotency-Key header is the same request as the
//     caller's earlier one with that key, for idempotencyKeyTTL;
//   - without one, a request with the same body, from the same caller
//     (retryCaller) with the same tool activity header, is taken
//     for a retry for the retry window (Options.RetryWindow) after the
//     previous attempt ended (or was answered from it);
//   - a retry of a finished attempt gets its answer again: the same status
//     and body, or the same stream of chunks; a retry of one still running
//     waits for it, or (streaming) follows it: the chunks so far, then the
//     rest as they come;
//   - what is kept: an answer that succeeded, and a failure after the
//     agent's tool calls ran, which is then answered with 422 (which no SDK
//     retries) saying why; a failure before any tool call ran is not kept,
//     so a retry runs again;
//   - a key used before with another request gets 422.

// Retry bookkeeping defaults and bounds.
const (
	// DefaultRetryWindow is how long an identical request counts as a
	// retry: longer than the SDKs' backoff between attempts (LangChain's
	// doubles up to 32 s).
	DefaultRetryWindow = 60 * time.Second
	// idempotencyKeyTTL is how long an Idempotency-Key's answer is kept.
	idempotencyKeyTTL = time.Hour
	// maxKeptAnswer bounds one kept answer; a longer one is not replayed.
	maxKeptAnswer = 1 << 20
	// maxKeptAnswers bounds all of them; the least recently used go first.
	maxKeptAnswers = 64 << 20
	// maxIdempotencyKey bounds the header's length.
	maxIdempotencyKey = 255
)

// retryGuard holds the answers of /v1/chat/completions for their retries.
type retryGuard struct {
	answers *idempotency.Store
	// window is how long an identical request counts as a retry; 0: never
	// (only Idempotency-Key).
	window time.Duration
}

func newRetryGuard(window time.Duration) *retryGuard {
	switch {
	case window == 0:
		window = DefaultRetryWindow
	case window < 0:
		window = 0
	}
	return &retryGuard{answers: idempotency.New(idempotency.Limits{MaxAnswer: maxKeptAnswer, MaxTotal: maxKeptAnswers}), window: window}
}

// errBadIdempotencyKey refuses an Idempotency-Key header that cannot be one.
var errBadIdempotencyKey = errors.New("the Idempotency-Key header must be 1 to 255 printable ASCII characters")

// begin finds the request's entry: a new one when this is the first
// attempt (first), the first attempt's otherwise. A nil entry means the
// request is not tracked (no key, and the retry window is off).
func (g *retryGuard) begin(r *http.Request, body []byte) (e *idempotency.Entry, first bool, err error) {
	caller := retryCaller(r)
	h := sha256.New()
	h.Write(caller[:])
	h.Write([]byte{0})
	h.Write([]byte(r.Header.Get("X-Ruleagent-Tool-Activity")))
	h.Write([]byte{0})
	h.Write(body)
	var request [32]byte
	h.Sum(request[:0])

	if key := r.Header.Get("Idempotency-Key"); key != "" {
		if len(key) > maxIdempotencyKey || strings.IndexFunc(key, func(c rune) bool { return c < 0x20 || c > 0x7e }) >= 0 {
			return nil, false, errBadIdempotencyKey
		}
		return g.answers.Begin("key\x00"+string(caller[:])+"\x00"+key, request, idempotencyKeyTTL)
	}
	if g.window == 0 {
		return nil, true, nil
	}
	return g.answers.Begin("body\x00"+string(request[:]), request, g.window)
}

// retryCaller names who sent r: its verified user when there is one (a
// refreshed token is the same caller), else the credentials it came with.
func retryCaller(r *http.Request) [32]byte {
	if p := identity.From(r.Context()); p.User != "" {
		return sha256.Sum256([]byte("user\x00" + p.User))
	}
	return sha256.Sum256([]byte("auth\x00" + r.Header.Get("Authorization")))
}

// replay answers a retry from its first attempt's entry e.
func (g *retryGuard) replay(w http.ResponseWriter, r *http.Request, e *idempotency.Entry, stream bool, heartbeat time.Duration) {
	if stream {
		// The stream's headers are known once the first attempt started
		// it, which it does before running.
		if e.WaitResponse(r.Context()) != nil {
			return
		}
		_, h := e.Response()
		out := sse.Start(w, heartbeat, replayHeaders(h))
		defer out.Close()
		if err := e.Replay(r.Context(), out.Data); errors.Is(err, idempotency.ErrTruncated) {
			_ = out.Data(completions.ErrorJSON(truncatedAnswer, "invalid_request_error", "answer_not_kept"))
			_ = out.Data([]byte("[DONE]"))
		}
		return
	}
	if e.Wait(r.Context()) != nil {
		return
	}
	status, h := e.Response()
	for k, v := range replayHeaders(h) {
		w.Header().Set(k, v)
	}
	var body []byte
	if err := e.Replay(r.Context(), func(b []byte) error { body = append(body, b...); return nil }); err != nil {
		writeOpenAIError(w, http.StatusUnprocessableEntity, truncatedAnswer, "invalid_request_error", "answer_not_kept")
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

const truncatedAnswer = "this request was answered before (a retry, or a reused Idempotency-Key), and its answer was longer than the server keeps; it is not run again: send a new request to run it again"

// replayHeaders are the first attempt's headers, marked as a replay.
func replayHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h)+1)
	for k, v := range h {
		out[k] = v
	}
	out["Idempotent-Replayed"] = "true"
	return out
}

// sideEffectFailure rewrites the failure of a run whose tool calls ran:
// 422, which no SDK retries, saying why it is not run again.
func sideEffectFailure(message, code string, calls int, names []string) (int, string, string, string) {
	msg := "the run failed after " + strconv.Itoa(calls) + " tool call"
	if calls != 1 {
		msg += "s"
	}
	msg += " had run (" + strings.Join(names, ", ") + "); it is not run again, so that they do not run twice: send a new request to run it again. The failure: " + message
	return http.StatusUnprocessableEntity, msg, "run_failed_after_tool_calls", code
}
