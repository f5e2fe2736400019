package netguard

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		addr  string
		class Class
		form  string // the IPv6 form read through, if any
	}{
		{"8.8.8.8", Public, ""},
		{"1.1.1.1", Public, ""},
		{"93.184.216.34", Public, ""},
		{"127.0.0.1", Loopback, ""},
		{"127.255.255.254", Loopback, ""},
		{"10.0.0.1", Private, ""},
		{"172.16.0.1", Private, ""},
		{"172.31.255.255", Private, ""},
		{"172.32.0.1", Public, ""},
		{"192.168.1.1", Private, ""},
		{"169.254.1.1", LinkLocal, ""},
		{"169.254.169.254", Metadata, ""},
		{"169.254.170.2", Metadata, ""},
		{"100.100.100.200", Metadata, ""},
		{"168.63.129.16", Metadata, ""},
		{"192.0.0.192", Metadata, ""},
		{"100.64.0.1", CGNAT, ""},
		{"100.127.255.255", CGNAT, ""},
		{"100.128.0.1", Public, ""},
		{"0.0.0.0", Unspecified, ""},
		{"0.1.2.3", Unspecified, ""},
		{"224.0.0.1", Multicast, ""},
		{"239.255.255.250", Multicast, ""},
		{"255.255.255.255", Broadcast, ""},
		{"240.0.0.1", Reserved, ""},
		{"192.0.2.1", Reserved, ""},
		{"198.18.0.1", Reserved, ""},
		{"::1", Loopback, ""},
		{"::", Unspecified, ""},
		{"fe80::1", LinkLocal, ""},
		{"fe80::1%eth0", LinkLocal, ""},
		{"fc00::1", Private, ""},
		{"fd12:3456::1", Private, ""},
		{"fec0::1", Private, ""},
		{"fd00:ec2::254", Metadata, ""},
		{"ff02::1", Multicast, ""},
		{"2001:db8::1", Reserved, ""},
		{"2606:4700::1111", Public, ""},
		{"::ffff:127.0.0.1", Loopback, "IPv4-mapped"},
		{"::ffff:7f00:1", Loopback, "IPv4-mapped"},
		{"::ffff:169.254.169.254", Metadata, "IPv4-mapped"},
		{"::ffff:8.8.8.8", Public, "IPv4-mapped"},
		{"::ffff:0:127.0.0.1", Loopback, "IPv4-translated"},
		{"64:ff9b::7f00:1", Loopback, "NAT64"},
		{"64:ff9b::127.0.0.1", Loopback, "NAT64"},
		{"64:ff9b::10.0.0.1", Private, "NAT64"},
		{"64:ff9b::a9fe:a9fe", Metadata, "NAT64"},
		{"64:ff9b::8.8.8.8", Public, ""},
		{"64:ff9b:1::1", Reserved, ""},
		{"2002:7f00:1::1", Loopback, "6to4"},
		{"2002:a00:1::", Private, "6to4"},
		{"2002:808:808::1", Public, ""},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", Loopback, "Teredo"}, // client ^80ff:fffe = 127.0.0.1
		{"::127.0.0.1", Loopback, "IPv4-compatible"},
		{"::8.8.8.8", Reserved, ""},
	}
	for _, c := range cases {
		v := Classify(netip.MustParseAddr(c.addr))
		if v.Class != c.class {
			t.Errorf("%s: class %v, want %v", c.addr, v.Class, c.class)
		}
		if c.form != "" && c.class != Public && v.Form != c.form {
			t.Errorf("%s: form %q, want %q", c.addr, v.Form, c.form)
		}
	}
}

func TestCheckAddrReasonsAndAllowPrivate(t *testing.T) {
	def := mustPolicy(t, Config{})
	lab := mustPolicy(t, Config{AllowPrivate: []string{"127.0.0.0/8", "10.1.0.0/16", "::1", "169.254.0.0/16", "0.0.0.0/0"}})
	cases := []struct {
		addr, host string
		p          *Policy
		rule       Rule // "" = allowed
		reason     string
	}{
		{"127.0.0.1", "", def, RuleLoopback, "destination 127.0.0.1 is a loopback address"},
		{"127.0.0.1", "loop.test", def, RuleLoopback, "destination loop.test (127.0.0.1) is a loopback address"},
		{"::ffff:127.0.0.1", "", def, RuleLoopback, "destination ::ffff:127.0.0.1 is an IPv4-mapped form of 127.0.0.1, a loopback address"},
		{"64:ff9b::7f00:1", "", def, RuleLoopback, "destination 64:ff9b::7f00:1 is an NAT64 form of 127.0.0.1, a loopback address"},
		{"10.0.0.1", "", def, RulePrivate, "is a private address"},
		{"100.64.0.9", "", def, RuleCGNAT, "carrier-grade NAT"},
		{"169.254.169.254", "", def, RuleMetadata, "is a cloud metadata address"},
		{"8.8.8.8", "", def, "", ""},
		// allowPrivate opens what it lists, and nothing else.
		{"127.0.0.1", "", lab, "", ""},
		{"::ffff:127.0.0.1", "", lab, "", ""},
		{"::1", "", lab, "", ""},
		{"10.1.2.3", "", lab, "", ""},
		{"10.2.0.1", "", lab, "", ""}, // 0.0.0.0/0 covers it
		{"fc00::1", "", lab, RulePrivate, "private"},
		// Metadata, unspecified, multicast and broadcast stay refused even
		// under a range that covers them.
		{"169.254.169.254", "", lab, RuleMetadata, "cloud metadata"},
		{"169.254.170.2", "", lab, RuleMetadata, "cloud metadata"},
		{"0.0.0.0", "", lab, RuleUnspecified, "unspecified"},
		{"224.0.0.1", "", lab, RuleMulticast, "multicast"},
		{"255.255.255.255", "", lab, RuleBroadcast, "broadcast"},
		// A NAT64 form is judged as the v6 address it is, not opened by
		// the IPv4 range it carries.
		{"64:ff9b::7f00:1", "", lab, RuleLoopback, "NAT64 form of 127.0.0.1"},
	}
	for _, c := range cases {
		expect(t, c.addr, c.p.CheckAddr(netip.MustParseAddr(c.addr), c.host), c.rule, c.reason)
	}
}

// expect checks a policy decision: r is nil when rule is "", else a
// refusal under rule whose reason holds reason, and a tools.ErrPolicyDenied.
func expect(t *testing.T, what string, r *Refusal, rule Rule, reason string) {
	t.Helper()
	switch {
	case rule == "" && r != nil:
		t.Errorf("%s: refused: %v", what, r)
	case rule != "" && r == nil:
		t.Errorf("%s: allowed, want %s", what, rule)
	case rule != "" && (r.Rule != rule || !strings.Contains(r.Reason, reason)):
		t.Errorf("%s: %s %q\n want %s %q", what, r.Rule, r.Reason, rule, reason)
	case r != nil && !errors.Is(r, tools.ErrPolicyDenied):
		t.Errorf("%s: not a policy refusal", what)
	}
}

func mustPolicy(t testing.TB, c Config) *Policy {
	t.Helper()
	p, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// BenchmarkCheckAddr is the check every connection makes (make bench).
func BenchmarkCheckAddr(b *testing.B) {
	p := mustPolicy(b, Config{AllowPrivate: []string{"10.1.0.0/16"}})
	for _, s := range []string{"93.184.216.34", "127.0.0.1", "10.1.2.3", "2606:4700::1111", "::ffff:169.254.169.254", "64:ff9b::7f00:1"} {
		ip := netip.MustParseAddr(s)
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.CheckAddr(ip, "")
			}
		})
	}
}

// BenchmarkControl is the dialer's Control function on an allowed address:
// parse the "ip:port" string the dialer hands over, then check it.
func BenchmarkControl(b *testing.B) {
	p := mustPolicy(b, Config{})
	ctl := p.Control("example.com")
	b.ReportAllocs()
	for b.Loop() {
		if err := ctl(context.Background(), "tcp4", "93.184.216.34:443", nil); err != nil {
			b.Fatal(err)
		}
	}
}
