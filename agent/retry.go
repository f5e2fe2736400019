package agent

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/openai/openai-go/v3"
)

// Retry and failover decisions are made on status codes and typed errors,
// never on message text.

// retryableStatus lists the HTTP statuses worth another attempt.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
		529: // "overloaded", used by some providers
		return true
	}
	return false
}

// classify says whether err is worth retrying on the same endpoint, and
// whether it is worth trying the next endpoint.
func classify(ctx context.Context, err error) (retry, failover bool) {
	if ctx.Err() != nil {
		return false, false
	}
	var ae *openai.Error
	if errors.As(err, &ae) {
		switch ae.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusPaymentRequired:
			// This endpoint's key or model is wrong: another may work.
			return false, true
		}
		r := retryableStatus(ae.StatusCode)
		return r, r
	}
	var se *StreamError
	if errors.As(err, &se) {
		return true, true
	}
	var stall *StallError
	if errors.As(err, &stall) {
		// Silence is the endpoint's (or the way to it): try again, then
		// the next.
		return true, true
	}
	if errors.Is(err, ErrStreamBroken) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true, true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true, true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true, true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE, syscall.EHOSTUNREACH, syscall.ENETUNREACH} {
		if errors.Is(err, errno) {
			return true, true
		}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.IsTemporary, true
	}
	return false, false
}

const maxBackoff = 30 * time.Second

// backoff returns the delay before retry attempt n (1-based).
func backoff(base time.Duration, n int, err error) time.Duration {
	if d, ok := retryAfter(err); ok {
		return min(d, 2*maxBackoff)
	}
	if base <= 0 {
		return 0
	}
	d := base << (n - 1)
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	// Jitter in [0.75, 1.25) so that many clients do not retry in step.
	return time.Duration(float64(d) * (0.75 + rand.Float64()/2))
}

// retryAfter reads a Retry-After header from an API error.
func retryAfter(err error) (time.Duration, bool) {
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.Response == nil {
		return 0, false
	}
	h := ae.Response.Header.Get("Retry-After")
	if h == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(h, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}
