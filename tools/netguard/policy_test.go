package netguard

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

func TestCheckURL(t *testing.T) {
	open := mustPolicy(t, Config{})
	listed := mustPolicy(t, Config{
		AllowHosts: []string{"api.example.com", "*.docs.example.org", "metadata.google.internal"},
		DenyHosts:  []string{"*.internal.docs.example.org", "secret.docs.example.org"},
	})
	cases := []struct {
		url    string
		p      *Policy
		rule   Rule // "" = passes
		reason string
	}{
		{"https://example.com/page", open, "", ""},
		{"http://8.8.8.8/", open, "", ""},
		{"https://[2606:4700::1111]/", open, "", ""},
		{"ftp://example.com/", open, RuleScheme, `not "ftp:"`},
		{"file:///etc/passwd", open, RuleScheme, "only http and https"},
		{"gopher://127.0.0.1:6379/_FLUSHALL", open, RuleScheme, "only http and https"},
		{"javascript:alert(1)", open, RuleScheme, "only http and https"},
		{"http:example.com", open, RuleMalformed, "no //host"},
		{"http://user:pw@example.com/", open, RuleUserinfo, "carries credentials"},
		{"http://user@example.com/", open, RuleUserinfo, "carries credentials"},
		{"http:///path", open, RuleMalformed, "no host"},
		{"http://example.com:0/", open, RuleMalformed, "not a valid port"},
		{"http://127.0.0.1/", open, RuleLoopback, "destination 127.0.0.1 is a loopback address"},
		{"http://127.1/", open, RuleLoopback, "destination 127.1 is 127.0.0.1 written in a non-canonical form, a loopback address"},
		{"http://2130706433/", open, RuleLoopback, "2130706433 is 127.0.0.1"},
		{"http://0x7f000001/", open, RuleLoopback, "0x7f000001 is 127.0.0.1"},
		{"http://017700000001/", open, RuleLoopback, "017700000001 is 127.0.0.1"},
		{"http://0177.0.0.1/", open, RuleLoopback, "loopback"},
		{"http://127.000.000.001/", open, RuleLoopback, "loopback"},
		{"http://0/", open, RuleUnspecified, "unspecified"},
		{"http://0.0.0.0:8080/", open, RuleUnspecified, "unspecified"},
		{"http://[::]/", open, RuleUnspecified, "unspecified"},
		{"http://[::1]/", open, RuleLoopback, "loopback"},
		{"http://[::ffff:127.0.0.1]/", open, RuleLoopback, "IPv4-mapped form of 127.0.0.1, a loopback address"},
		{"http://[0:0:0:0:0:ffff:7f00:1]/", open, RuleLoopback, "IPv4-mapped"},
		{"http://[64:ff9b::7f00:1]/", open, RuleLoopback, "NAT64 form of 127.0.0.1"},
		{"http://[64:ff9b::169.254.169.254]/", open, RuleMetadata, "NAT64 form of 169.254.169.254, a cloud metadata address"},
		{"http://[2002:7f00:1::]/", open, RuleLoopback, "6to4 form"},
		{"http://[fe80::1%25eth0]/", open, RuleLinkLocal, "link-local"},
		{"http://169.254.169.254/latest/meta-data/", open, RuleMetadata, "cloud metadata"},
		{"http://0xa9fea9fe/", open, RuleMetadata, "cloud metadata"},
		{"http://[fd00:ec2::254]/", open, RuleMetadata, "cloud metadata"},
		{"http://metadata.google.internal/computeMetadata/v1/", open, RuleMetadata, "is a cloud metadata service"},
		{"http://METADATA.GOOGLE.INTERNAL./", open, RuleMetadata, "cloud metadata service"},
		{"http://10.0.0.1/", open, RulePrivate, "private"},
		{"http://192.168.0.1/", open, RulePrivate, "private"},
		{"http://100.64.0.1/", open, RuleCGNAT, "carrier-grade NAT"},
		{"http://224.0.0.1/", open, RuleMulticast, "multicast"},
		{"http://255.255.255.255/", open, RuleBroadcast, "broadcast"},
		{"http://0x08080808/", open, RuleIPForm, "write it as 8.8.8.8"},
		{"http://8.8.2056/", open, RuleIPForm, "write it as 8.8.8.8"},
		{"http://1.2.3.4.5/", open, RuleMalformed, "not a valid one"},
		{"http://256.1.1.1/", open, RuleMalformed, "not a valid one"},
		// Allow and deny lists, on the parsed host.
		{"https://api.example.com/v1", listed, "", ""},
		{"https://API.Example.COM./v1", listed, "", ""},
		{"https://api.example.com.evil.test/", listed, RuleHostNotAllowed, "host api.example.com.evil.test is not on the tool's allow list"},
		{"https://api.example.com@evil.test/", listed, RuleUserinfo, "credentials"},
		{"https://evil.test#@api.example.com", listed, RuleHostNotAllowed, "evil.test"},
		{"https://evil.test?@api.example.com", listed, RuleHostNotAllowed, "evil.test"},
		{"https://evilapi.example.com/", listed, RuleHostNotAllowed, "evilapi.example.com"},
		{"https://example.com/", listed, RuleHostNotAllowed, "example.com"},
		{"https://a.docs.example.org/", listed, "", ""},
		{"https://docs.example.org/", listed, RuleHostNotAllowed, "docs.example.org"},
		{"https://x.internal.docs.example.org/", listed, RuleHostDenied, "host x.internal.docs.example.org is on the tool's deny list"},
		{"https://SECRET.docs.example.org./", listed, RuleHostDenied, "host secret.docs.example.org is on the tool's deny list"},
		{"https://аpi.example.com/", listed, RuleHostNotAllowed, "xn--pi-6kc.example.com"},
		{"https://8.8.8.8/", listed, RuleHostNotAllowed, "8.8.8.8"},
		// An allow list never opens a metadata service.
		{"http://metadata.google.internal/", listed, RuleMetadata, "cloud metadata service"},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Errorf("%s: does not parse: %v", c.url, err)
			continue
		}
		_, r := c.p.CheckURL(u)
		expect(t, c.url, r, c.rule, c.reason)
		// A refusal never quotes a deny pattern.
		if r != nil && strings.Contains(r.Reason, "*.") {
			t.Errorf("%s: the reason quotes a pattern: %s", c.url, r.Reason)
		}
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	six, neg := 6, -1
	cases := []struct {
		c    Config
		path string
	}{
		{Config{AllowHosts: []string{"ok.example", "https://x.example"}}, "allowHosts[1]"},
		{Config{DenyHosts: []string{"*.*.example"}}, "denyHosts[0]"},
		{Config{AllowPrivate: []string{"10.0.0.0/33"}}, "allowPrivate[0]"},
		{Config{AllowPrivate: []string{"10.0.0.1/8"}}, "allowPrivate[0]"},
		{Config{AllowPrivate: []string{"localhost"}}, "allowPrivate[0]"},
		{Config{MaxRedirects: &six}, "maxRedirects"},
		{Config{MaxRedirects: &neg}, "maxRedirects"},
		{Config{Proxy: "socks5://127.0.0.1:1080"}, "proxy"},
		{Config{Proxy: "http://proxy.example/path"}, "proxy"},
		{Config{DNSServer: "dns.example:53"}, "dnsServer"},
		{Config{DNSServer: "127.0.0.1"}, "dnsServer"},
	}
	for _, c := range cases {
		_, err := New(c.c)
		var ce *tools.ConfigError
		if !errors.As(err, &ce) || ce.Path != c.path {
			t.Errorf("%+v: %v, want an error at %s", c.c, err, c.path)
		}
	}
}

func TestParseURLRefusesWhatParsersDisagreeOn(t *testing.T) {
	cases := []struct{ url, reason string }{
		{"http://example.com/a\r\nHost: internal", "line break"},
		{"http://example.com/\nX: y", "line break"},
		{"http://example.com/\x00", "control character"},
		{"http://exa\tmple.com/", "control character"},
		{"http://example.com/a b", "space"},
		{`http://evil.test\@api.example.com/`, "backslash"},
		{`http:\\127.0.0.1\`, "backslash"},
		{"http://%31%32%37.0.0.1/", "does not parse"},
		{"http://[::1/", "does not parse"},
		{"http://" + strings.Repeat("a", MaxURLLength), "longer than"},
	}
	for _, c := range cases {
		_, r := ParseURL(c.url)
		expect(t, c.url, r, RuleMalformed, c.reason)
	}
	if u, r := ParseURL("https://example.com/a?b=c#d"); r != nil || u.Host != "example.com" {
		t.Fatal(u, r)
	}
}
