package identity

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// ProxyConfig says which proxy names the caller in a header: the header
// is honoured only on connections from the trusted addresses.
type ProxyConfig struct {
	// Header holds the user id ("X-Forwarded-User" when empty).
	Header string
	// Trusted are the proxies' addresses (CIDRs; a bare address is one
	// host). Required.
	Trusted []netip.Prefix
	// RoleHeader, when set, is the header in which the proxy grants
	// roles (values separated by commas or spaces, in one or more
	// headers): OperatorClaim among them grants RoleOperator.
	RoleHeader string
}

// ParsePrefixes reads CIDRs and bare addresses.
func ParsePrefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR nor an address", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

type proxyVerifier struct {
	header     string
	roleHeader string
	trusted    []netip.Prefix
}

func newProxyVerifier(cfg ProxyConfig) (*proxyVerifier, error) {
	if len(cfg.Trusted) == 0 {
		return nil, fmt.Errorf("a trusted proxy header needs the proxies' addresses (--trusted-proxy CIDR)")
	}
	if cfg.Header == "" {
		cfg.Header = "X-Forwarded-User"
	}
	pv := &proxyVerifier{header: http.CanonicalHeaderKey(cfg.Header), trusted: cfg.Trusted}
	if cfg.RoleHeader != "" {
		pv.roleHeader = http.CanonicalHeaderKey(cfg.RoleHeader)
	}
	return pv, nil
}

// fromTrusted reports whether the connection comes from a trusted proxy.
// The peer address is the TCP connection's, never a forwarded header.
func (p *proxyVerifier) fromTrusted(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, pre := range p.trusted {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// verify reads the user from the header. present reports whether the
// request carries the header at all.
func (p *proxyVerifier) verify(r *http.Request) (pr Principal, present bool, err error) {
	vals := r.Header.Values(p.header)
	if len(vals) == 0 {
		return Principal{}, false, nil
	}
	if !p.fromTrusted(r) {
		return Principal{}, true, fmt.Errorf("%w: %s is honoured only from a trusted proxy, and %s is not one", ErrUnauthenticated, p.header, r.RemoteAddr)
	}
	if len(vals) != 1 {
		return Principal{}, true, fmt.Errorf("%w: the request has %d %s headers", ErrUnauthenticated, len(vals), p.header)
	}
	if err := CheckUser(vals[0]); err != nil {
		return Principal{}, true, fmt.Errorf("%w: %s: %v", ErrUnauthenticated, p.header, err)
	}
	pr = Principal{User: vals[0], Method: MethodProxy}
	if p.roleHeader != "" {
		for _, v := range r.Header.Values(p.roleHeader) {
			if slices.Contains(splitValues(v), OperatorClaim) {
				pr.Role = RoleOperator
			}
		}
	}
	return pr, true, nil
}
