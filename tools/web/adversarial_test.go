package web_test

// The adversarial SSRF and header suite: hostile URLs, names, redirects
// and headers, each sent through web_fetch as the agent calls it, each
// asserted refused with its rule and reason, and each checked for its
// effect: the local servers standing in for internal services receive
// nothing. Servers and the resolver are local; nothing leaves the host.

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/ruleagent/ruleagent/tools/netguard"
	"github.com/ruleagent/ruleagent/tools/netguard/dnstest"
)

func internalService(t *testing.T, addr string) *site {
	return newSite(t, addr, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("INTERNAL-SECRET"))
	})
}

// Literal and encoded addresses under the default policy: every way of
// writing a loopback, private or metadata address is refused before a
// connection is made, and the service on 127.0.0.1 sees nothing.
func TestAdversarialLiteralDestinations(t *testing.T) {
	svc := internalService(t, "127.0.0.1:0")
	p := svc.port
	h := newHarness(t, "web_fetch", map[string]any{})
	cases := []struct {
		url    string
		rule   netguard.Rule
		reason string
	}{
		{"http://127.0.0.1:" + p + "/", netguard.RuleLoopback, "destination 127.0.0.1 is a loopback address"},
		{"http://127.1:" + p + "/", netguard.RuleLoopback, "destination 127.1 is 127.0.0.1 written in a non-canonical form, a loopback address"},
		{"http://127.0.1:" + p + "/", netguard.RuleLoopback, "127.0.1 is 127.0.0.1"},
		{"http://2130706433:" + p + "/", netguard.RuleLoopback, "2130706433 is 127.0.0.1"},
		{"http://0x7f000001:" + p + "/", netguard.RuleLoopback, "0x7f000001 is 127.0.0.1"},
		{"http://0X7F000001:" + p + "/", netguard.RuleLoopback, "is 127.0.0.1"},
		{"http://017700000001:" + p + "/", netguard.RuleLoopback, "017700000001 is 127.0.0.1"},
		{"http://0177.0.0.1:" + p + "/", netguard.RuleLoopback, "0177.0.0.1 is 127.0.0.1"},
		{"http://0177.0.0.01:" + p + "/", netguard.RuleLoopback, "is 127.0.0.1"},
		{"http://0x7f.0.0.1:" + p + "/", netguard.RuleLoopback, "0x7f.0.0.1 is 127.0.0.1"},
		{"http://0x7f.1:" + p + "/", netguard.RuleLoopback, "is 127.0.0.1"},
		{"http://127.000.000.001:" + p + "/", netguard.RuleLoopback, "is 127.0.0.1"},
		{"http://127.0.0.1.:" + p + "/", netguard.RuleLoopback, "loopback"},
		{"http://[::1]:" + p + "/", netguard.RuleLoopback, "destination ::1 is a loopback address"},
		{"http://[0:0:0:0:0:0:0:1]:" + p + "/", netguard.RuleLoopback, "loopback"},
		{"http://[::ffff:127.0.0.1]:" + p + "/", netguard.RuleLoopback, "is an IPv4-mapped form of 127.0.0.1, a loopback address"},
		{"http://[::ffff:7f00:1]:" + p + "/", netguard.RuleLoopback, "IPv4-mapped form of 127.0.0.1"},
		{"http://[0:0:0:0:0:ffff:127.0.0.1]:" + p + "/", netguard.RuleLoopback, "IPv4-mapped"},
		{"http://[::ffff:0:127.0.0.1]:" + p + "/", netguard.RuleLoopback, "IPv4-translated form of 127.0.0.1"},
		{"http://[64:ff9b::7f00:1]:" + p + "/", netguard.RuleLoopback, "is an NAT64 form of 127.0.0.1, a loopback address"},
		{"http://[64:ff9b::127.0.0.1]:" + p + "/", netguard.RuleLoopback, "NAT64 form of 127.0.0.1"},
		{"http://[64:ff9b::a00:1]/", netguard.RulePrivate, "NAT64 form of 10.0.0.1, a private address"},
		{"http://[64:ff9b:1::a00:1]/", netguard.RuleReserved, "reserved"},
		{"http://[2002:7f00:1::]:" + p + "/", netguard.RuleLoopback, "6to4 form of 127.0.0.1"},
		{"http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", netguard.RuleLoopback, "Teredo form of 127.0.0.1"},
		{"http://[::127.0.0.1]:" + p + "/", netguard.RuleLoopback, "IPv4-compatible form of 127.0.0.1"},
		{"http://0.0.0.0:" + p + "/", netguard.RuleUnspecified, "destination 0.0.0.0 is an unspecified address"},
		{"http://0:" + p + "/", netguard.RuleUnspecified, "0 is 0.0.0.0"},
		{"http://[::]:" + p + "/", netguard.RuleUnspecified, "unspecified"},
		{"http://10.0.0.1/", netguard.RulePrivate, "destination 10.0.0.1 is a private address"},
		{"http://172.16.0.1/", netguard.RulePrivate, "private"},
		{"http://192.168.1.1/", netguard.RulePrivate, "private"},
		{"http://3232235777/", netguard.RulePrivate, "3232235777 is 192.168.1.1"},
		{"http://[fc00::1]/", netguard.RulePrivate, "private"},
		{"http://[fd12:3456::1]/", netguard.RulePrivate, "private"},
		{"http://100.64.0.1/", netguard.RuleCGNAT, "carrier-grade NAT (CGNAT)"},
		{"http://169.254.1.1/", netguard.RuleLinkLocal, "link-local"},
		{"http://[fe80::1%25lo]/", netguard.RuleLinkLocal, "link-local"},
		{"http://169.254.169.254/latest/meta-data/iam/security-credentials/", netguard.RuleMetadata, "destination 169.254.169.254 is a cloud metadata address"},
		{"http://0xa9fea9fe/latest/meta-data/", netguard.RuleMetadata, "0xa9fea9fe is 169.254.169.254"},
		{"http://0251.0376.0251.0376/", netguard.RuleMetadata, "is 169.254.169.254"},
		{"http://[::ffff:169.254.169.254]/", netguard.RuleMetadata, "IPv4-mapped form of 169.254.169.254, a cloud metadata address"},
		{"http://[64:ff9b::a9fe:a9fe]/", netguard.RuleMetadata, "NAT64 form of 169.254.169.254"},
		{"http://[fd00:ec2::254]/latest/meta-data/", netguard.RuleMetadata, "cloud metadata"},
		{"http://169.254.170.2/v2/credentials", netguard.RuleMetadata, "cloud metadata"},
		{"http://100.100.100.200/latest/meta-data/", netguard.RuleMetadata, "cloud metadata"},
		{"http://168.63.129.16/machine", netguard.RuleMetadata, "cloud metadata"},
		{"http://metadata.google.internal/computeMetadata/v1/", netguard.RuleMetadata, "host metadata.google.internal is a cloud metadata service"},
		{"http://Metadata.Google.Internal./", netguard.RuleMetadata, "cloud metadata service"},
		{"http://224.0.0.1/", netguard.RuleMulticast, "multicast"},
		{"http://[ff02::1]/", netguard.RuleMulticast, "multicast"},
		{"http://255.255.255.255/", netguard.RuleBroadcast, "broadcast"},
		{"http://240.0.0.1/", netguard.RuleReserved, "reserved"},
		{"http://198.18.0.1/", netguard.RuleReserved, "reserved"},
		{"http://0x08080808/", netguard.RuleIPForm, "host 0x08080808 is an IPv4 address in a non-canonical form; write it as 8.8.8.8"},
		{"http://1.2.3.4.5/", netguard.RuleMalformed, "looks like an IPv4 address but is not a valid one"},
		{"http://256.0.0.1/", netguard.RuleMalformed, "not a valid one"},
		{"http://%31%32%37.0.0.1:" + p + "/", netguard.RuleMalformed, "does not parse"},
		{"http://127.0.0.1:" + p + "/\r\nX-Injected: 1", netguard.RuleMalformed, "line break"},
		{"http://127.0.0.1:" + p + "\\@example.com/", netguard.RuleMalformed, "backslash"},
		{"http://127.0.0.1:" + p + "/ HTTP/1.1", netguard.RuleMalformed, "space"},
		{"http://example.com:99999/", netguard.RuleMalformed, `port "99999" is not a valid port`},
		{"file:///etc/passwd", netguard.RuleScheme, `only http and https URLs may be requested, not "file:"`},
		{"gopher://127.0.0.1:" + p + "/_GET", netguard.RuleScheme, `not "gopher:"`},
		{"ftp://example.com/", netguard.RuleScheme, `not "ftp:"`},
		{"dict://127.0.0.1:11211/stats", netguard.RuleScheme, "only http and https"},
		{"javascript:alert(1)", netguard.RuleScheme, "only http and https"},
		{"//127.0.0.1:" + p + "/", netguard.RuleScheme, `not ":"`},
		{"http://user:pass@example.com/", netguard.RuleUserinfo, "the URL carries credentials (user:password@); they are never sent"},
		{"http://127.0.0.1:" + p + "@example.com/", netguard.RuleUserinfo, "carries credentials"},
	}
	for _, c := range cases {
		refused(t, c.url, h.call(map[string]any{"url": c.url}), c.rule, c.reason)
	}
	if n := svc.hits.Load(); n != 0 {
		t.Fatalf("the loopback service received %d requests", n)
	}
}

// Names that resolve to refused addresses, through a local resolver: the
// address is checked when the connection is made, after resolution.
func TestAdversarialNames(t *testing.T) {
	svc := internalService(t, "127.0.0.1:0")
	p := svc.port
	dns := dnstest.New(t, dnstest.Static(map[string][]string{
		"loop.test":          {"127.0.0.1"},
		"127.0.0.1.nip.test": {"127.0.0.1"},
		"mapped.test":        {"::ffff:127.0.0.1"},
		"nat64.test":         {"64:ff9b::7f00:1"},
		"six.test":           {"::1"},
		"meta.test":          {"169.254.169.254"},
		"private.test":       {"10.1.2.3"},
		"cgnat.test":         {"100.64.9.9"},
		"ula.test":           {"fd00::1"},
		"zero.test":          {"0.0.0.0"},
		"both.test":          {"10.1.2.3", "169.254.169.254"},
	}))
	h := newHarness(t, "web_fetch", map[string]any{"dnsServer": dns.Addr})
	cases := []struct {
		host   string
		rule   netguard.Rule
		reason string
	}{
		{"localhost", netguard.RuleLoopback, "destination localhost ("}, // 127.0.0.1 or ::1, by /etc/hosts
		{"LocalHost.", netguard.RuleLoopback, "loopback"},
		{"loop.test", netguard.RuleLoopback, "destination loop.test (127.0.0.1) is a loopback address"},
		{"127.0.0.1.nip.test", netguard.RuleLoopback, "loopback"},
		{"mapped.test", netguard.RuleLoopback, "loopback"},
		{"nat64.test", netguard.RuleLoopback, "destination nat64.test (64:ff9b::7f00:1) is an NAT64 form of 127.0.0.1"},
		{"six.test", netguard.RuleLoopback, "six.test (::1)"},
		{"meta.test", netguard.RuleMetadata, "meta.test (169.254.169.254) is a cloud metadata address"},
		{"private.test", netguard.RulePrivate, "private.test (10.1.2.3) is a private address"},
		{"cgnat.test", netguard.RuleCGNAT, "CGNAT"},
		{"ula.test", netguard.RulePrivate, "private"},
		{"zero.test", netguard.RuleUnspecified, "unspecified"},
		{"nowhere.test", netguard.RuleLookup, "the lookup of nowhere.test failed (no such host), so the destination cannot be checked"},
	}
	for _, c := range cases {
		u := "http://" + c.host + ":" + p + "/"
		refused(t, u, h.call(map[string]any{"url": u}), c.rule, c.reason)
	}
	out := h.call(map[string]any{"url": "http://both.test:" + p + "/"})
	if !out.IsError || out.Kind != "permission_denied" {
		t.Errorf("both.test: %s", out.Content)
	}
	if n := svc.hits.Load(); n != 0 {
		t.Fatalf("the loopback service received %d requests", n)
	}
}

// DNS rebinding between lookups: rebind.test answers the allowed address
// first, then an internal one. The first call reaches the allowed site;
// the second connection is checked on what it connects to and refused,
// and the internal service never sees it.
func TestAdversarialRebinding(t *testing.T) {
	site := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close") // the next call must connect again
		w.Write([]byte("public page"))
	})
	svc := internalService(t, "127.0.0.2:"+site.port)
	dns := dnstest.New(t, func(name string, q dnsmessage.Type, n int) dnstest.Answer {
		if q != dnsmessage.TypeA {
			return dnstest.Answer{}
		}
		if n == 0 {
			return dnstest.Answer{Addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}}
		}
		return dnstest.Answer{Addrs: []netip.Addr{netip.MustParseAddr("127.0.0.2")}}
	})
	h := newHarness(t, "web_fetch", local(map[string]any{"dnsServer": dns.Addr}))
	u := "http://rebind.test:" + site.port + "/"
	if out := h.call(map[string]any{"url": u}); out.IsError || !strings.Contains(out.Content, "public page") {
		t.Fatalf("first call: %s", out.Content)
	}
	refused(t, "rebound", h.call(map[string]any{"url": u}), netguard.RuleLoopback, "destination rebind.test (127.0.0.2) is a loopback address")
	if n := dns.Count("rebind.test", dnsmessage.TypeA); n != 2 {
		t.Fatalf("%d lookups", n)
	}
	if n := svc.hits.Load(); n != 0 {
		t.Fatalf("the internal service received %d requests", n)
	}
}

// Redirects from an allowed site: each target is checked like a first
// request, and the internal service (127.0.0.2, same port) sees nothing.
func TestAdversarialRedirects(t *testing.T) {
	var svcPort string
	var hops atomic.Int32
	site := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to":
			target := strings.ReplaceAll(r.URL.Query().Get("u"), "PORT", svcPort)
			code := http.StatusFound
			if r.URL.Query().Get("code") == "307" {
				code = http.StatusTemporaryRedirect
			}
			w.Header().Set("Location", target)
			w.WriteHeader(code)
		case "/loop":
			hops.Add(1)
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/chain":
			n := len(r.URL.Query()["x"])
			if n == 4 {
				w.Write([]byte("after four redirects"))
				return
			}
			http.Redirect(w, r, r.URL.String()+"&x=1", http.StatusFound)
		}
	})
	svcPort = site.port
	svc := internalService(t, "127.0.0.2:"+site.port)
	dns := dnstest.New(t, dnstest.Static(map[string][]string{"internal.test": {"127.0.0.2"}}))
	h := newHarness(t, "web_fetch", local(map[string]any{"dnsServer": dns.Addr}))
	base := "http://127.0.0.1:" + site.port
	cases := []struct {
		target string
		rule   netguard.Rule
		reason string
	}{
		{"http://127.0.0.2:PORT/", netguard.RuleLoopback, "redirect 1 to http://127.0.0.2:" + site.port + "/ refused: destination 127.0.0.2 is a loopback address"},
		{"http://[::1]:PORT/", netguard.RuleLoopback, "refused: destination ::1 is a loopback address"},
		{"http://0x7f000002:PORT/", netguard.RuleLoopback, "0x7f000002 is 127.0.0.2"},
		{"http://[::ffff:127.0.0.2]:PORT/", netguard.RuleLoopback, "IPv4-mapped form of 127.0.0.2"},
		{"http://internal.test:PORT/", netguard.RuleLoopback, "destination internal.test (127.0.0.2) is a loopback address"},
		{"http://169.254.169.254/latest/meta-data/", netguard.RuleMetadata, "refused: destination 169.254.169.254 is a cloud metadata address"},
		{"http://metadata.google.internal/", netguard.RuleMetadata, "cloud metadata service"},
		{"http://10.0.0.1/admin", netguard.RulePrivate, "private"},
		{"file:///etc/passwd", netguard.RuleScheme, `not "file:"`},
		{"gopher://127.0.0.2:PORT/_x", netguard.RuleScheme, `not "gopher:"`},
		{"http://user:pw@127.0.0.1:PORT/", netguard.RuleUserinfo, "carries credentials"},
	}
	for _, c := range cases {
		for _, code := range []string{"302", "307"} {
			args := map[string]any{"url": base + "/to?code=" + code + "&u=" + url.QueryEscape(c.target)}
			if code == "307" {
				args["method"], args["body"] = "POST", `{"secret":"body"}`
			}
			refused(t, c.target+" ("+code+")", h.call(args), c.rule, c.reason)
		}
	}
	refused(t, "redirect loop", h.call(map[string]any{"url": base + "/loop"}), netguard.RuleRedirects, "more than 5 redirects")
	if n := hops.Load(); n != 6 {
		t.Errorf("the loop was followed %d times, want the first request and 5 redirects", n)
	}
	if out := h.call(map[string]any{"url": base + "/chain?x=0"}); out.IsError || !strings.Contains(out.Content, "after four redirects") {
		t.Errorf("four allowed redirects: %s", out.Content)
	}
	if n := svc.hits.Load(); n != 0 {
		t.Fatalf("the internal service received %d requests", n)
	}
}

// Allow lists are matched on the parsed host with a dot boundary: user
// info, suffixes, look-alike labels and encodings do not get past them.
func TestAdversarialAllowList(t *testing.T) {
	s := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("reached " + r.Host)) })
	p := s.port
	names := map[string][]string{}
	for _, n := range []string{"api.example.test", "evil.test", "api.example.test.evil.test", "evilapi.example.test",
		"x.api.example.test", "example.test", "a.docs.example.test", "docs.example.test", "xn--pi-6kc.example.test",
		"private.docs.example.test", "evildocs.example.test"} {
		names[n] = []string{"127.0.0.1"}
	}
	dns := dnstest.New(t, dnstest.Static(names))
	h := newHarness(t, "web_fetch", local(map[string]any{"dnsServer": dns.Addr,
		"allowHosts": []string{"api.example.test", "*.docs.example.test"},
		"denyHosts":  []string{"private.docs.example.test"}}))
	cases := []struct {
		url    string
		rule   netguard.Rule
		reason string
	}{
		{"http://api.example.test@evil.test:" + p + "/", netguard.RuleUserinfo, "carries credentials"},
		{"http://api.example.test:" + p + "@evil.test:" + p + "/", netguard.RuleUserinfo, "carries credentials"},
		{"http://api.example.test.evil.test:" + p + "/", netguard.RuleHostNotAllowed, "host api.example.test.evil.test is not on the tool's allow list"},
		{"http://evilapi.example.test:" + p + "/", netguard.RuleHostNotAllowed, "evilapi.example.test is not on"},
		{"http://x.api.example.test:" + p + "/", netguard.RuleHostNotAllowed, "x.api.example.test"},
		{"http://example.test:" + p + "/", netguard.RuleHostNotAllowed, "example.test is not on"},
		{"http://docs.example.test:" + p + "/", netguard.RuleHostNotAllowed, "docs.example.test is not on"},
		{"http://evildocs.example.test:" + p + "/", netguard.RuleHostNotAllowed, "evildocs.example.test"},
		{"http://evil.test:" + p + "/#@api.example.test", netguard.RuleHostNotAllowed, "host evil.test is not on"},
		{"http://evil.test:" + p + "/?@api.example.test", netguard.RuleHostNotAllowed, "host evil.test is not on"},
		{"http://evil.test:" + p + "/api.example.test", netguard.RuleHostNotAllowed, "host evil.test is not on"},
		{"http://аpi.example.test:" + p + "/", netguard.RuleHostNotAllowed, "xn--pi-6kc.example.test is not on"},
		{"http://127.0.0.1:" + p + "/", netguard.RuleHostNotAllowed, "host 127.0.0.1 is not on"},
		{"http://private.docs.example.test:" + p + "/", netguard.RuleHostDenied, "host private.docs.example.test is on the tool's deny list"},
		{"http://PRIVATE.Docs.Example.Test.:" + p + "/", netguard.RuleHostDenied, "on the tool's deny list"},
	}
	for _, c := range cases {
		out := h.call(map[string]any{"url": c.url})
		refused(t, c.url, out, c.rule, c.reason)
		if strings.Contains(out.Content, "*.docs") {
			t.Errorf("%s: the refusal quotes a pattern: %s", c.url, out.Content)
		}
	}
	if n := s.hits.Load(); n != 0 {
		t.Fatalf("%d requests got through", n)
	}
	for _, u := range []string{"http://api.example.test:" + p + "/", "http://API.EXAMPLE.TEST.:" + p + "/", "http://a.docs.example.test:" + p + "/"} {
		if out := h.call(map[string]any{"url": u}); out.IsError || !strings.Contains(out.Content, "reached ") {
			t.Errorf("%s: %s", u, out.Content)
		}
	}
}

// Header smuggling and credential headers: refused before anything is
// sent; the server sees no request at all.
func TestAdversarialHeaders(t *testing.T) {
	s := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	h := newHarness(t, "web_fetch", local(nil))
	target := "http://127.0.0.1:" + s.port + "/"
	cases := []struct {
		name, value string
		reason      string
	}{
		{"Authorization", "Bearer stolen", "header Authorization is refused: credentials come only from the tool's auth profiles"},
		{"authorization", "Basic YTpi", "credentials come only from the tool's auth profiles"},
		{"Proxy-Authorization", "Basic YTpi", "addressed to proxies"},
		{"Proxy-Anything", "x", "addressed to proxies"},
		{"Cookie", "session=abc", "credentials come only"},
		{"Host", "metadata.google.internal", "header Host is refused"},
		{"Content-Length", "0", "smuggle"},
		{"Transfer-Encoding", "chunked", "smuggle"},
		{"Connection", "keep-alive, Upgrade", "smuggle"},
		{"Upgrade", "websocket", "smuggle"},
		{"TE", "trailers", "smuggle"},
		{"Expect", "100-continue", "smuggle"},
		{"Accept-Encoding", "br", "guard decompression"},
		{"X-Forwarded-For", "127.0.0.1", "forge where the request comes from"},
		{"X-Forwarded-Host", "localhost", "forge where"},
		{"Forwarded", "for=127.0.0.1;host=internal", "forge where"},
		{"X-Real-IP", "10.0.0.1", "forge where"},
		{"X-Api-Key", "k", "looks like a credential"},
		{"X-Auth-Token", "t", "looks like a credential"},
		{"Private-Token", "t", "looks like a credential"},
		{"X-Amz-Security-Token", "t", "looks like a credential"},
		{"X-Goog-Api-Key", "k", "looks like a credential"},
		{"X-Test", "a\r\nHost: internal", "its value contains a line break (CR or LF)"},
		{"X-Test", "a\nAuthorization: Bearer x", "line break"},
		{"X-Test", "a\r", "line break"},
		{"X-Test\r\nX-Evil", "v", "a header name contains a line break"},
		{"X-Test", "a\x00b", "control character"},
		{"X-Te st", "v", "not a valid HTTP token"},
		{"X-Test:", "v", "not a valid HTTP token"},
	}
	for _, c := range cases {
		out := h.call(map[string]any{"url": target, "headers": map[string]string{c.name: c.value}})
		refused(t, c.name+": "+c.value, out, netguard.RuleHeader, c.reason)
	}
	if n := s.hits.Load(); n != 0 {
		t.Fatalf("%d requests were sent", n)
	}
	// A refused header among good ones refuses the call.
	out := h.call(map[string]any{"url": target, "headers": map[string]string{"Accept": "text/plain", "Cookie": "a=b"}})
	refused(t, "mixed", out, netguard.RuleHeader, "Cookie")
	if out := h.call(map[string]any{"url": target, "headers": map[string]string{"Accept": "text/plain"}}); out.IsError || s.hits.Load() != 1 {
		t.Fatalf("a plain header: %s", out.Content)
	}
}
