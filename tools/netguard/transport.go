package netguard

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Transport returns an HTTP transport whose every connection goes through
// DialContext. Proxy variables of the environment are ignored: the only
// proxy is the configured one. Compression is left to the caller, which
// must guard decompression itself (the transport's transparent gzip has no
// ratio limit).
func (p *Policy) Transport() *http.Transport {
	t := &http.Transport{
		DialContext:            p.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        60 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  30 * time.Second,
		ExpectContinueTimeout:  time.Second,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	if p.proxy != nil {
		t.Proxy = http.ProxyURL(p.proxy)
	}
	return t
}

// RoundTripper checks every request it sends, the first and each redirect
// alike, with CheckURL (and Preflight when a proxy is used) before handing
// it to next, addressed to the normalised host name that was checked.
type RoundTripper struct {
	Policy *Policy
	Next   http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (rt RoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	h, r := rt.Policy.CheckURL(req.URL)
	if r != nil {
		closeBody(req)
		return nil, r
	}
	if rt.Policy.Proxied() {
		if err := rt.Policy.Preflight(req.Context(), h); err != nil {
			closeBody(req)
			return nil, err
		}
	}
	if !h.IP.IsValid() && h.Name != req.URL.Hostname() {
		// Dial the name that was checked (lower case, IDNA, no trailing
		// dot), not another spelling a resolver might read differently.
		host := h.Name
		if port := req.URL.Port(); port != "" {
			host = net.JoinHostPort(host, port)
		}
		req = req.Clone(req.Context())
		req.URL.Host, req.Host = host, host
	}
	return rt.Next.RoundTrip(req)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// CheckRedirect is an http.Client CheckRedirect function: it bounds the
// redirects and checks each target before it is requested, naming the hop
// in the refusal. With maxRedirects 0 the redirect response itself is the
// answer (http.ErrUseLastResponse), so its Location can be shown.
func (p *Policy) CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > p.maxRedirects {
		if p.maxRedirects == 0 {
			return http.ErrUseLastResponse
		}
		return refuse(RuleRedirects, "more than %d redirects (the last to %s)", p.maxRedirects, req.URL.Redacted())
	}
	if _, r := p.CheckURL(req.URL); r != nil {
		return &Refusal{Rule: r.Rule, Reason: "redirect " + strconv.Itoa(len(via)) + " to " + req.URL.Redacted() + " refused: " + r.Reason}
	}
	return nil
}

// AsRefusal finds the refusal inside an error returned by a client of the
// policy (wrapped in *url.Error and *net.OpError).
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}
