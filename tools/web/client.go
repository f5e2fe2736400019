package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/netguard"
)

// Common is the configuration web_fetch and web_search share: the network
// policy (see package netguard), the auth profiles and the limits.
type Common struct {
	netguard.Config
	Auth                  map[string]AuthProfile `json:"auth,omitempty" jsonschema:"Named credentials, each attached to the requests for its hosts only. Their secret values are scrubbed from every output."`
	Timeout               tools.Duration         `json:"timeout,omitempty" jsonschema:"Longest a call may take, redirects and reading the body included."`
	MaxBytes              int64                  `json:"maxBytes,omitempty" jsonschema:"Most bytes of a response body read (after decompression); the rest is not downloaded, and the answer says it was cut."`
	MaxDecompressionRatio int                    `json:"maxDecompressionRatio,omitempty" jsonschema:"A compressed body that expands more than this many times (once past 256 KiB) is refused as a decompression bomb."`
	UserAgent             string                 `json:"userAgent,omitempty" jsonschema:"The User-Agent header sent when the call sets none."`
}

var defaultCommon = Common{
	Timeout:               tools.Duration(30 * time.Second),
	MaxBytes:              2 << 20,
	MaxDecompressionRatio: 100,
	UserAgent:             "ruleagent (+https://github.com/ruleagent/ruleagent)",
}

// Bounds of the limits a config may set.
const (
	minBytes    = 1 << 10
	maxBytesCap = 64 << 20
	maxTimeout  = 10 * time.Minute
)

// client makes the requests of one tool instance. Its transport, and so
// its idle connections, are shared by the tool's calls.
type client struct {
	policy    *netguard.Policy
	transport *http.Transport
	rt        http.RoundTripper
	timeout   time.Duration
	limits    limits
	userAgent string
}

func newClient(bc tools.BuildContext, c Common) (*client, error) {
	switch {
	case c.Timeout.D() <= 0 || c.Timeout.D() > maxTimeout:
		return nil, &tools.ConfigError{Path: "timeout", Msg: fmt.Sprintf("must be more than 0 and at most %s", maxTimeout)}
	case c.MaxBytes < minBytes || c.MaxBytes > maxBytesCap:
		return nil, &tools.ConfigError{Path: "maxBytes", Msg: fmt.Sprintf("must be %d to %d", minBytes, maxBytesCap)}
	case c.MaxDecompressionRatio < 2:
		return nil, &tools.ConfigError{Path: "maxDecompressionRatio", Msg: "must be at least 2"}
	case c.UserAgent == "" || !httpguts.ValidHeaderFieldValue(c.UserAgent):
		return nil, &tools.ConfigError{Path: "userAgent", Msg: "must be a non-empty header value without line breaks"}
	}
	p, err := netguard.New(c.Config)
	if err != nil {
		return nil, err
	}
	auth, err := compileAuth(c.Auth, bc.Secrets)
	if err != nil {
		return nil, err
	}
	if ps := p.ProxySecrets(); len(ps) > 0 && bc.Secrets != nil {
		bc.Secrets.AddSecrets(ps...)
	}
	t := p.Transport()
	return &client{
		policy:    p,
		transport: t,
		rt:        netguard.RoundTripper{Policy: p, Next: authTransport{auth: auth, next: t}},
		timeout:   c.Timeout.D(),
		limits:    limits{maxBytes: c.MaxBytes, maxRatio: c.MaxDecompressionRatio},
		userAgent: c.UserAgent,
	}, nil
}

// do sends req under the policy, following the redirects it allows, and
// reports how many were followed. The caller closes the response body
// (the call's context, cancelled by the caller, bounds reading it).
func (c *client) do(req *http.Request) (*http.Response, int, error) {
	hops := 0
	hc := &http.Client{Transport: c.rt, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if err := c.policy.CheckRedirect(r, via); err != nil {
			return err
		}
		hops = len(via)
		return nil
	}}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, hops, c.requestError(req.Context(), err)
	}
	return resp, hops, nil
}

// fetch sends req with do, then reads the whole body under the limits and
// closes it. The response's Body is closed when it returns.
func (c *client) fetch(req *http.Request) (*http.Response, body, int, error) {
	resp, hops, err := c.do(req)
	if err != nil {
		return nil, body{}, hops, err
	}
	defer resp.Body.Close()
	b, err := readBody(resp, c.limits)
	if err != nil {
		if req.Context().Err() == context.DeadlineExceeded {
			return nil, body{}, hops, tools.Errorf(tools.ErrTimeout, "the response was not read within %s", c.timeout)
		}
		return nil, body{}, hops, err
	}
	return resp, b, hops, nil
}

// requestError turns a failed request into a typed tool error: a policy
// refusal keeps its reason and rule, a timeout says so.
func (c *client) requestError(ctx context.Context, err error) error {
	if r, ok := netguard.AsRefusal(err); ok {
		return &tools.Error{Kind: tools.ErrPolicyDenied, Err: r}
	}
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded {
		return tools.Errorf(tools.ErrTimeout, "the request did not finish within %s", c.timeout)
	}
	return tools.Wrap(tools.ErrExecutionFailed, err, "the request failed")
}

// Close closes the idle connections (tools.Set closes its tools).
func (c *client) Close() error {
	c.transport.CloseIdleConnections()
	return nil
}
