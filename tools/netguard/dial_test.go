package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/netguard"
	"github.com/ruleagent/ruleagent/tools/netguard/dnstest"
)

// victim is a TCP listener that counts the connections it accepts: the
// effect a refusal must prevent.
type victim struct {
	addr     string
	accepted atomic.Int32
}

func listen(t *testing.T, addr string) *victim {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	v := &victim{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			v.accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return v
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func policy(t *testing.T, c netguard.Config) *netguard.Policy {
	t.Helper()
	p, err := netguard.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDialChecksTheResolvedAddress(t *testing.T) {
	v := listen(t, "127.0.0.1:0")
	dns := dnstest.New(t, dnstest.Static(map[string][]string{
		"loop.test":     {"127.0.0.1"},
		"mapped.test":   {"::ffff:127.0.0.1"},
		"nat64.test":    {"64:ff9b::7f00:1"},
		"meta.test":     {"169.254.169.254"},
		"private.test":  {"10.0.0.7"},
		"cgnat.test":    {"100.64.3.3"},
		"ula.test":      {"fd00::7"},
		"zero.test":     {"0.0.0.0"},
		"127.0.0.1.nip": {"127.0.0.1"},
	}))
	p := policy(t, netguard.Config{DNSServer: dns.Addr})
	cases := []struct {
		host   string
		rule   netguard.Rule
		reason string
	}{
		{"127.0.0.1", netguard.RuleLoopback, "destination 127.0.0.1 is a loopback address"},
		{"localhost", netguard.RuleLoopback, "destination localhost ("}, // 127.0.0.1 or ::1, by /etc/hosts
		{"loop.test", netguard.RuleLoopback, "destination loop.test (127.0.0.1) is a loopback address"},
		{"LOOP.test.", netguard.RuleLoopback, "loopback"},
		{"127.0.0.1.nip", netguard.RuleLoopback, "loopback"},
		{"mapped.test", netguard.RuleLoopback, "loopback"},
		{"nat64.test", netguard.RuleLoopback, "NAT64 form of 127.0.0.1, a loopback address"},
		{"meta.test", netguard.RuleMetadata, "destination meta.test (169.254.169.254) is a cloud metadata address"},
		{"private.test", netguard.RulePrivate, "private"},
		{"cgnat.test", netguard.RuleCGNAT, "carrier-grade NAT"},
		{"ula.test", netguard.RulePrivate, "private"},
		{"zero.test", netguard.RuleUnspecified, "unspecified"},
		{"nx.test", netguard.RuleLookup, "the lookup of nx.test failed (no such host), so the destination cannot be checked"},
	}
	for _, c := range cases {
		conn, err := p.DialContext(context.Background(), "tcp", net.JoinHostPort(c.host, port(v.addr)))
		if conn != nil {
			conn.Close()
		}
		r, ok := netguard.AsRefusal(err)
		if !ok {
			t.Errorf("%s: %v, want a refusal", c.host, err)
			continue
		}
		if r.Rule != c.rule || !strings.Contains(r.Reason, c.reason) {
			t.Errorf("%s: %s %q, want %s %q", c.host, r.Rule, r.Reason, c.rule, c.reason)
		}
		if !errors.Is(err, tools.ErrPolicyDenied) {
			t.Errorf("%s: not ErrPolicyDenied", c.host)
		}
	}
	if n := v.accepted.Load(); n != 0 {
		t.Fatalf("the loopback listener accepted %d connections", n)
	}
}

func TestDialServerFailureIsARefusal(t *testing.T) {
	dns := dnstest.New(t, func(string, dnsmessage.Type, int) dnstest.Answer {
		return dnstest.Answer{RCode: dnsmessage.RCodeServerFailure}
	})
	p := policy(t, netguard.Config{DNSServer: dns.Addr})
	_, err := p.DialContext(context.Background(), "tcp", "broken.test:80")
	if r, ok := netguard.AsRefusal(err); !ok || r.Rule != netguard.RuleLookup {
		t.Fatalf("%v", err)
	}
}

// A name whose answers mix a refused and an allowed address connects only
// to the allowed one; when every answer is refused nothing connects.
func TestDialMixedAnswers(t *testing.T) {
	v := listen(t, "127.0.0.1:0")
	canary := listen(t, "127.0.0.2:"+port(v.addr))
	dns := dnstest.New(t, dnstest.Static(map[string][]string{
		"mixed.test":   {"10.0.0.9", "127.0.0.1"},
		"refused.test": {"10.0.0.9", "127.0.0.2"},
	}))
	p := policy(t, netguard.Config{DNSServer: dns.Addr, AllowPrivate: []string{"127.0.0.1/32"}})
	conn, err := p.DialContext(context.Background(), "tcp", "mixed.test:"+port(v.addr))
	if err != nil {
		t.Fatal(err)
	}
	if got := conn.RemoteAddr().String(); got != v.addr {
		t.Fatalf("connected to %s", got)
	}
	conn.Close()
	_, err = p.DialContext(context.Background(), "tcp", "refused.test:"+port(v.addr))
	if _, ok := netguard.AsRefusal(err); !ok {
		t.Fatalf("%v", err)
	}
	if n := canary.accepted.Load(); n != 0 {
		t.Fatalf("the refused address accepted %d connections", n)
	}
}

// DNS rebinding: the name answers an allowed address first and a refused
// one afterwards. Each connection is checked on the address it connects
// to, so the second is refused and the refused address never sees a
// connection.
func TestDialRebinding(t *testing.T) {
	v := listen(t, "127.0.0.1:0")
	canary := listen(t, "127.0.0.2:"+port(v.addr))
	dns := dnstest.New(t, func(name string, q dnsmessage.Type, n int) dnstest.Answer {
		if name != "rebind.test" || q != dnsmessage.TypeA {
			return dnstest.Answer{}
		}
		if n == 0 {
			return dnstest.Answer{Addrs: addrs("127.0.0.1")}
		}
		return dnstest.Answer{Addrs: addrs("127.0.0.2")}
	})
	p := policy(t, netguard.Config{DNSServer: dns.Addr, AllowPrivate: []string{"127.0.0.1/32"}})
	target := "rebind.test:" + port(v.addr)
	conn, err := p.DialContext(context.Background(), "tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	_, err = p.DialContext(context.Background(), "tcp", target)
	r, ok := netguard.AsRefusal(err)
	if !ok || r.Rule != netguard.RuleLoopback || !strings.Contains(r.Reason, "rebind.test (127.0.0.2)") {
		t.Fatalf("%v", err)
	}
	if n := dns.Count("rebind.test", dnsmessage.TypeA); n != 2 {
		t.Fatalf("%d lookups, want 2", n)
	}
	if n := canary.accepted.Load(); n != 0 {
		t.Fatalf("the rebound address accepted %d connections", n)
	}
}

// Proxy variables are ignored unless a proxy is configured.
func TestTransportIgnoresProxyEnvironment(t *testing.T) {
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"} {
		t.Setenv(k, "http://127.0.0.1:1")
	}
	t.Setenv("NO_PROXY", "")
	if tr := policy(t, netguard.Config{}).Transport(); tr.Proxy != nil {
		t.Fatal("the transport has a proxy function")
	}
	tr := policy(t, netguard.Config{Proxy: "http://proxy.example:3128"}).Transport()
	req, _ := http.NewRequest("GET", "https://example.com/", nil)
	u, err := tr.Proxy(req)
	if err != nil || u.String() != "http://proxy.example:3128" {
		t.Fatalf("%v %v", u, err)
	}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}
