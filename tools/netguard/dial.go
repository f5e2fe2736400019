package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// Dial timeouts. The request's context bounds the whole call; these bound
// one connection attempt so that a black-holed address among several does
// not take all of it.
const (
	dialTimeout = 10 * time.Second
	keepAlive   = 30 * time.Second
)

func newResolver(server string) (*net.Resolver, error) {
	ap, err := netip.ParseAddrPort(server)
	if err != nil {
		return nil, fmt.Errorf("%q: want an IP address and a port, e.g. 127.0.0.1:53", server)
	}
	addr := ap.String()
	d := net.Dialer{Timeout: 5 * time.Second}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}, nil
}

// Control is a net.Dialer ControlContext function: it runs after name
// resolution, just before each connect(2), with the address about to be
// connected to, and refuses it unless the policy lets connections reach
// it. host is the name being dialled, for the message; it may be empty.
func (p *Policy) Control(host string) func(ctx context.Context, network, address string, c syscall.RawConn) error {
	return func(_ context.Context, network, address string, _ syscall.RawConn) error {
		return p.checkDialAddr(host, network, address)
	}
}

func (p *Policy) checkDialAddr(host, network, address string) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return refuse(RuleScheme, "only TCP connections are made, not %s", network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refuse(RuleMalformed, "cannot read the address %q being connected to", address)
	}
	if r := p.CheckAddr(ap.Addr(), host); r != nil {
		return r
	}
	return nil
}

// DialContext connects to addr ("host:port") for an HTTP transport. The
// name is resolved by the policy's resolver and every address the dialer
// tries is checked by Control right before it connects, so what is checked
// is what is connected to: a name that resolves to a public address for a
// check and to a private one for the connection (DNS rebinding) gains
// nothing. A failed lookup is a refusal: a destination that cannot be
// resolved cannot be checked. The configured proxy is the one destination
// dialled without the address check: it is the operator's, and the
// request's own host is checked before it is sent to it (see Preflight).
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, refuse(RuleMalformed, "cannot read the address %q", addr)
	}
	d := net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlive, Resolver: p.resolver}
	if p.proxy == nil || addr != p.proxyAddr {
		d.ControlContext = p.Control(host)
	}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			return nil, lookupRefusal(host, dnsErr)
		}
		return nil, err
	}
	return conn, nil
}

func lookupRefusal(host string, e *net.DNSError) *Refusal {
	why := "no such host"
	switch {
	case e.IsTimeout:
		why = "timed out"
	case !e.IsNotFound:
		why = e.Err
	}
	return refuse(RuleLookup, "the lookup of %s failed (%s), so the destination cannot be checked", host, why)
}

// Preflight resolves a host that a proxy will connect to and checks every
// address it resolves to. It is only needed with a proxy: without one,
// DialContext checks each connection itself. The proxy resolves the name
// again, so a name that changes its answer between the two lookups is not
// caught here; documented as such.
func (p *Policy) Preflight(ctx context.Context, h Host) error {
	if h.IP.IsValid() {
		return nil // CheckURL has checked it
	}
	addrs, err := p.resolver.LookupNetIP(ctx, "ip", h.Name)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			return lookupRefusal(h.Name, dnsErr)
		}
		return refuse(RuleLookup, "the lookup of %s failed (%v), so the destination cannot be checked", h.Name, err)
	}
	if len(addrs) == 0 {
		return refuse(RuleLookup, "the lookup of %s returned no address, so the destination cannot be checked", h.Name)
	}
	for _, a := range addrs {
		if r := p.CheckAddr(a, h.Name); r != nil {
			return r
		}
	}
	return nil
}

// Proxied reports whether requests go through a configured proxy.
func (p *Policy) Proxied() bool { return p.proxy != nil }
