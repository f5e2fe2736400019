package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/demo"
	"github.com/ruleagent/ruleagent/telemetry"
)

// Requests go over plain net/http, not through openai-go: the SDK clones
// its request configuration, headers and request per call and keeps them
// for the whole stream, which at a thousand concurrent streams cost about
// 11 MiB. What the SDK did that matters is done here: the base URL, the
// Bearer key, the configured headers, and API errors decoded as
// *openai.Error (status, message, Retry-After through Response), so retry,
// failover and the circuit breaker see the same errors as before.

// wire is what one endpoint sends with every request, built once.
type wire struct {
	url string
	// header and streamHeader are shared by every request: net/http only
	// reads a request's headers (a redirect copies them).
	header       http.Header
	streamHeader http.Header
	hc           *http.Client
}

const userAgent = "ruleagent"

func newWire(e Endpoint, headers map[string]string, hc *http.Client) (wire, error) {
	u, err := url.Parse(e.URL)
	if err != nil {
		return wire{}, fmt.Errorf("url: %w", err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/chat/completions"
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}, "User-Agent": {userAgent}}
	if e.Key != "" {
		h.Set("Authorization", "Bearer "+e.Key)
	}
	for k, v := range headers {
		h.Set(k, v)
	}
	sh := h.Clone()
	sh.Set("Accept", "text/event-stream")
	if demo.IsURL(e.URL) {
		// The built-in demo model answers in process: its host never
		// resolves, and no request for it leaves the process.
		hc = demo.HTTPClient()
	}
	return wire{url: u.String(), header: h, streamHeader: sh, hc: hc}, nil
}

// post sends body and returns the response of a 2xx or 3xx status; any
// other status is an *openai.Error. body goes back to its pool once both
// the transport and post are done with it.
func (w *wire) post(ctx context.Context, body *requestBody, stream bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, body)
	if err != nil {
		body.release()
		body.release()
		return nil, err
	}
	req.ContentLength = int64(body.Len())
	// GetBody lets the transport resend the body on a fresh connection
	// (it does so only before the response, while post still holds it).
	buf := *body.buf
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	req.Header = w.header
	if stream {
		req.Header = w.streamHeader
	}
	if tc := telemetry.Headers(ctx); len(tc) > 0 {
		// Traced: the request carries its chat span's traceparent (and
		// tracestate), on a copy of the shared headers. Off, Headers is
		// one atomic load and the shared headers go as they are.
		req.Header = req.Header.Clone()
		for k, v := range tc {
			req.Header.Set(k, v)
		}
	}
	var resp *http.Response
	if s := tapFrom(ctx); s != nil {
		// A recording keeps the request and its answer; a replay answers.
		resp, err = s.roundTrip(ctx, w.url, stream, buf, func() (*http.Response, error) { return w.hc.Do(req) })
	} else {
		resp, err = w.hc.Do(req)
	}
	// The request is written (or failed): the buffer can go back once the
	// transport has closed it too.
	body.release()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 400 {
		return resp, nil
	}
	raw, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if rerr != nil {
		return nil, rerr
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	apiErr := &openai.Error{Request: req, Response: resp, StatusCode: resp.StatusCode}
	if e := gjson.GetBytes(raw, "error"); e.IsObject() {
		_ = apiErr.UnmarshalJSON([]byte(e.Raw))
	}
	return nil, apiErr
}

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 2*1024); return &b }}

// requestBody is a pooled request body. It has two holders, the transport
// (which closes it when it has written it, perhaps after Do returns) and
// post; the buffer is reused only when both have let go.
type requestBody struct {
	bytes.Reader
	buf    *[]byte
	refs   atomic.Int32
	closed atomic.Bool
}

var requestBodies = sync.Pool{New: func() any { return &requestBody{} }}

// newRequestBody takes a pooled buffer and fills it with fill.
func newRequestBody(fill func([]byte) []byte) *requestBody {
	b := requestBodies.Get().(*requestBody)
	b.buf = bodyPool.Get().(*[]byte)
	*b.buf = fill((*b.buf)[:0])
	b.Reset(*b.buf)
	b.refs.Store(2)
	b.closed.Store(false)
	return b
}

// Close implements io.Closer; the transport calls it.
func (b *requestBody) Close() error {
	if b.closed.CompareAndSwap(false, true) {
		b.release()
	}
	return nil
}

func (b *requestBody) release() {
	if b.refs.Add(-1) != 0 {
		return
	}
	if cap(*b.buf) <= 64<<10 {
		bodyPool.Put(b.buf)
	}
	b.buf = nil
	b.Reset(nil)
	requestBodies.Put(b)
}
