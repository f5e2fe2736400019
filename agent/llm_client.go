package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/ruleagent/ruleagent/internal/wait"
	"github.com/ruleagent/ruleagent/telemetry"
)

// Client talks to OpenAI-compatible chat-completions endpoints, with retries
// on retryable failures and ordered failover to backup endpoints.
//
// Requests go over net/http with exactly what a chain configures (see
// llm_http.go): no environment defaults (OPENAI_BASE_URL, OPENAI_API_KEY,
// ...) and no retries but the Client's own. API errors are *openai.Error,
// as openai-go returns them.
type Client struct {
	cfg LLMConfig
	eps []*endpoint
}

type endpoint struct {
	Endpoint
	wire     wire
	provider string
	stream   bodyPrefix
	plain    bodyPrefix
	echo     reasoningEcho
	breakerM sync.Mutex
	openTill time.Time
	cooldown time.Duration
}

// LLMError is a failed LLM call, after retries and failover.
type LLMError struct {
	URL   string
	Model string
	// Status is the HTTP status, 0 for network and stream failures.
	Status int
	Err    error
}

func (e *LLMError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("LLM %s (model %s) answered %d: %v", e.URL, e.Model, e.Status, apiMessage(e.Err))
	}
	return fmt.Sprintf("LLM %s (model %s): %v", e.URL, e.Model, e.Err)
}

func (e *LLMError) Unwrap() error { return e.Err }

func apiMessage(err error) string {
	var ae *openai.Error
	if errors.As(err, &ae) && ae.Message != "" {
		return ae.Message
	}
	return err.Error()
}

var defaultHTTPClient = &http.Client{Transport: func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.MaxIdleConnsPerHost = 32
	return t
}()}

// NewClient validates cfg and prepares each endpoint's request prefix.
func NewClient(cfg LLMConfig) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient
	}
	c := &Client{cfg: cfg}
	primary := cfg.Endpoints[0].Params
	for i, e := range cfg.Endpoints {
		params := primary
		if i > 0 && e.Params != nil {
			params = e.Params
		}
		w, err := newWire(e, cfg.Headers, hc)
		if err != nil {
			return nil, err
		}
		ep := &endpoint{Endpoint: e, wire: w, provider: providerOf(e.URL)}
		if ep.echo, err = parseReasoningEcho(params); err != nil {
			return nil, err
		}
		for _, stream := range []bool{true, false} {
			fields, ferr := bodyFields(e.Model, params, stream)
			if ferr != nil {
				return nil, ferr
			}
			p, perr := newBodyPrefix(fields)
			if perr != nil {
				return nil, perr
			}
			if stream {
				ep.stream = p
			} else {
				ep.plain = p
			}
		}
		c.eps = append(c.eps, ep)
	}
	return c, nil
}

// Model is the primary endpoint's model.
func (c *Client) Model() string { return c.eps[0].Model }

// Retry describes a retry or failover about to happen, for progress events.
type Retry struct {
	URL     string
	Model   string
	Attempt int
	Status  int
	Delay   time.Duration
	Err     error
	// Failover is true when the next attempt goes to another endpoint.
	Failover bool
}

// Complete sends req and returns the answer. With stream, deltas reach d as
// they arrive. A failure is retried (same endpoint, then the next ones)
// only while nothing of the answer has reached d: a retry after that would
// show the user duplicated text, so the error is returned instead.
func (c *Client) Complete(ctx context.Context, req *Request, stream bool, d Deltas, onRetry func(Retry)) (*Turn, error) {
	if telemetry.Enabled() {
		return c.completeTraced(ctx, req, stream, d, onRetry)
	}
	return c.complete(ctx, req, stream, d, onRetry)
}

func (c *Client) complete(ctx context.Context, req *Request, stream bool, d Deltas, onRetry func(Retry)) (*Turn, error) {
	var lastErr error
	order := c.order()
	for n, ep := range order {
		for attempt := 0; ; attempt++ {
			turn, emitted, err := ep.call(ctx, req, stream, d, c.cfg.FirstByteTimeout, c.cfg.IdleTimeout)
			if err == nil {
				ep.succeeded()
				turn.Provider = ep.provider
				return turn, nil
			}
			var de *deltaError
			if errors.As(err, &de) {
				// The receiver stopped the answer (an aspect refused a
				// chunk): not the LLM's failure.
				return nil, de.err
			}
			lastErr = c.wrap(ep, err)
			if emitted || ctx.Err() != nil {
				return nil, lastErr
			}
			retry, failover := classify(ctx, err)
			if retry && attempt < c.cfg.MaxRetries {
				delay := backoff(c.cfg.RetryBackoff, attempt+1, err)
				if onRetry != nil {
					onRetry(Retry{URL: ep.URL, Model: ep.Model, Attempt: attempt + 1, Status: status(err), Delay: delay, Err: lastErr})
				}
				if serr := wait.For(ctx, delay); serr != nil {
					return nil, lastErr
				}
				continue
			}
			ep.failed(c.cfg.CircuitCooldown)
			if !failover || n == len(order)-1 {
				return nil, lastErr
			}
			if onRetry != nil {
				onRetry(Retry{URL: order[n+1].URL, Model: order[n+1].Model, Attempt: 1, Status: status(err), Err: lastErr, Failover: true})
			}
			break
		}
	}
	return nil, lastErr
}

func (c *Client) wrap(ep *endpoint, err error) error {
	return &LLMError{URL: ep.URL, Model: ep.Model, Status: status(err), Err: err}
}

func status(err error) int {
	var ae *openai.Error
	if errors.As(err, &ae) {
		return ae.StatusCode
	}
	return 0
}

// order lists the endpoints to try: those whose circuit is closed, in
// configured order, then those whose circuit is open (a last resort).
func (c *Client) order() []*endpoint {
	now := time.Now()
	ready := make([]*endpoint, 0, len(c.eps))
	var open []*endpoint
	for _, ep := range c.eps {
		ep.breakerM.Lock()
		isOpen := now.Before(ep.openTill)
		ep.breakerM.Unlock()
		if isOpen {
			open = append(open, ep)
		} else {
			ready = append(ready, ep)
		}
	}
	return append(ready, open...)
}

func (ep *endpoint) failed(base time.Duration) {
	if base <= 0 {
		return
	}
	ep.breakerM.Lock()
	defer ep.breakerM.Unlock()
	if ep.cooldown == 0 {
		ep.cooldown = base
	} else {
		ep.cooldown = min(ep.cooldown*2, 10*time.Minute)
	}
	ep.openTill = time.Now().Add(ep.cooldown)
}

func (ep *endpoint) succeeded() {
	ep.breakerM.Lock()
	ep.openTill, ep.cooldown = time.Time{}, 0
	ep.breakerM.Unlock()
}

// call makes one request to this endpoint. A streamed request is watched
// for stalls (LLMConfig.FirstByteTimeout, IdleTimeout); a non-streamed
// answer comes whole when the model is done, so silence there cannot be
// told from work, and only the caller's context bounds it.
func (ep *endpoint) call(ctx context.Context, req *Request, stream bool, d Deltas, first, idle time.Duration) (*Turn, bool, error) {
	prefix := ep.plain
	var watch *stallWatch
	if stream {
		prefix = ep.stream
		if ctx, watch = watchStalls(ctx, first, idle); watch != nil {
			// Cancelled last: the body is drained first, on a live
			// connection.
			defer watch.cancel(nil)
			defer watch.stop()
		}
	}
	// The body is not held while the answer streams: it goes back to its
	// pool as soon as it is written.
	body := newRequestBody(func(b []byte) []byte { return prefix.appendBody(b, req, ep.echo) })
	resp, err := ep.wire.post(ctx, body, stream)
	if err != nil {
		if se := watch.err(ctx); se != nil {
			return nil, false, se
		}
		return nil, false, err
	}
	defer func() {
		// Read what follows [DONE] (the chunked terminator) so the
		// connection goes back to the pool instead of being closed: a new
		// TLS handshake per turn would cost more than the whole run.
		_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
		resp.Body.Close()
	}()
	if watch != nil {
		watch.progress() // the headers came
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if !stream || ct == "application/json" {
		// Some servers ignore "stream": they get the same treatment as a
		// non-streaming answer, replayed as deltas.
		raw, err := io.ReadAll(io.LimitReader(watch.body(resp.Body), 64<<20))
		if err != nil {
			if se := watch.err(ctx); se != nil {
				return nil, false, se
			}
			return nil, false, fmt.Errorf("%w: %w", ErrStreamBroken, err)
		}
		turn, err := decodeCompletion(raw)
		if err != nil {
			return nil, false, err
		}
		if stream {
			return turn, true, replay(turn, d)
		}
		return turn, false, nil
	}
	acc := &accumulator{d: d}
	if watch != nil {
		acc.onStart = watch.answerStarted
	}
	if err := acc.readStream(watch.body(resp.Body)); err != nil {
		if se := watch.err(ctx); se != nil {
			return nil, acc.emitted, se
		}
		return nil, acc.emitted, err
	}
	if acc.turn.Model == "" {
		acc.turn.Model = ep.Model
	}
	return &acc.turn, acc.emitted, nil
}

// replay sends a complete answer through d as if it had been streamed,
// keeping what d keeps.
func replay(t *Turn, d Deltas) error {
	var err error
	if t.Reasoning != "" {
		if t.Reasoning, err = d.Reasoning(t.Reasoning); err != nil {
			return received(err)
		}
	}
	if t.Content != "" {
		if t.Content, err = d.Text(t.Content); err != nil {
			return received(err)
		}
	}
	for i := range t.ToolCalls {
		tc := &t.ToolCalls[i]
		if err := d.ToolCallStart(i, tc.ID, tc.Name); err != nil {
			return received(err)
		}
		if tc.Arguments, err = d.ToolCallArgs(i, tc.Arguments); err != nil {
			return received(err)
		}
	}
	return nil
}

// NoLLMError says that no LLM is configured and exactly what to set.
type NoLLMError struct{ Missing []string }

func (e *NoLLMError) Error() string {
	return "no LLM configured: missing " + strings.Join(e.Missing, ", ") +
		". Set OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL (or --global llm_url=... api_key=... model=...), " +
		"or set the agent node's url, key and model"
}
