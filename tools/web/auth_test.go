package web_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ruleagent/ruleagent/tools/netguard/dnstest"
	"github.com/ruleagent/ruleagent/tools/web"
)

const (
	apiToken  = "tok-API-1234567890"
	wildKey   = "key-WILD-0987654321"
	secureTok = "tok-SECURE-5555555"
)

// Credentials come from named profiles, attach by the request's own host
// on every hop, never reach another host, never travel over plain http
// unless allowed, and are scrubbed from what the model reads even when
// the server echoes them.
func TestAuthProfilesAttachPerHost(t *testing.T) {
	var port string
	s := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, "http://"+to+":"+port+"/", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("seen Authorization=" + r.Header.Get("Authorization") + " X-Api-Key=" + r.Header.Get("X-Api-Key")))
	})
	port = s.port
	dns := dnstest.New(t, dnstest.Static(map[string][]string{
		"api.test": {"127.0.0.1"}, "sub.api.test": {"127.0.0.1"}, "other.test": {"127.0.0.1"}, "secure.test": {"127.0.0.1"},
		"basic.test": {"127.0.0.1"},
	}))
	h := newHarness(t, "web_fetch", local(map[string]any{"dnsServer": dns.Addr, "auth": map[string]any{
		"api":    map[string]any{"hosts": []string{"api.test"}, "bearer": apiToken, "allowHTTP": true},
		"wild":   map[string]any{"hosts": []string{"*.api.test"}, "header": "X-Api-Key", "value": wildKey, "allowHTTP": true},
		"secure": map[string]any{"hosts": []string{"secure.test"}, "bearer": secureTok},
		"basic":  map[string]any{"hosts": []string{"basic.test"}, "basic": map[string]string{"username": "bot", "password": "pw-basic-424242"}, "allowHTTP": true},
	}}))
	type sent struct{ auth, key string }
	cases := []struct {
		url  string
		want map[string]sent // by Host seen at the server
	}{
		{"http://api.test:" + port + "/", map[string]sent{"api.test": {"Bearer " + apiToken, ""}}},
		{"http://sub.api.test:" + port + "/", map[string]sent{"sub.api.test": {"", wildKey}}},
		{"http://other.test:" + port + "/", map[string]sent{"other.test": {"", ""}}},
		{"http://basic.test:" + port + "/", map[string]sent{"basic.test": {"Basic " + base64.StdEncoding.EncodeToString([]byte("bot:pw-basic-424242")), ""}}},
		// A redirect away from the credential's host does not carry it;
		// a redirect to it gets it.
		{"http://api.test:" + port + "/?to=other.test", map[string]sent{"api.test": {"Bearer " + apiToken, ""}, "other.test": {"", ""}}},
		{"http://other.test:" + port + "/?to=api.test", map[string]sent{"other.test": {"", ""}, "api.test": {"Bearer " + apiToken, ""}}},
	}
	for _, c := range cases {
		before, _ := s.requests()
		out := h.call(map[string]any{"url": c.url})
		if out.IsError {
			t.Errorf("%s: %s", c.url, out.Content)
			continue
		}
		for _, secret := range []string{apiToken, wildKey, "pw-basic-424242", base64.StdEncoding.EncodeToString([]byte("bot:pw-basic-424242"))} {
			if strings.Contains(out.Content, secret) {
				t.Errorf("%s: the credential reached the model: %s", c.url, out.Content)
			}
		}
		headers, hosts := s.requests()
		headers, hosts = headers[len(before):], hosts[len(before):]
		if len(hosts) != len(c.want) {
			t.Errorf("%s: %d requests: %v", c.url, len(hosts), hosts)
			continue
		}
		for i, host := range hosts {
			name := strings.Split(host, ":")[0]
			w, ok := c.want[name]
			if !ok || headers[i].Get("Authorization") != w.auth || headers[i].Get("X-Api-Key") != w.key {
				t.Errorf("%s: %s received Authorization=%q X-Api-Key=%q", c.url, name, headers[i].Get("Authorization"), headers[i].Get("X-Api-Key"))
			}
		}
	}
	// Over plain http, a https-only credential is refused, not sent.
	before := s.hits.Load()
	refused(t, "secure over http", h.call(map[string]any{"url": "http://secure.test:" + port + "/"}), web.RuleAuthOverHTTP,
		"host secure.test has a credential (auth profile secure), which is only sent over https")
	if s.hits.Load() != before {
		t.Fatal("the request was sent")
	}
	headers, _ := s.requests()
	for _, hd := range headers {
		if strings.Contains(hd.Get("Authorization"), secureTok) {
			t.Fatal("the https-only token was sent over http")
		}
	}
}

// A configured proxy carries every request; the request's own host is
// resolved and checked first, so the proxy is never asked for an internal
// address. Proxy variables of the environment are ignored.
func TestProxyIsUsedOnlyWhenConfigured(t *testing.T) {
	s := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("direct")) })
	var proxied atomic.Int32
	proxy := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		w.Write([]byte("proxied " + r.Method + " " + r.URL.String() + " auth=" + r.Header.Get("Proxy-Authorization")))
	})
	dns := dnstest.New(t, dnstest.Static(map[string][]string{"site.test": {"127.0.0.1"}, "inner.test": {"10.0.0.3"}}))

	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"} {
		t.Setenv(k, "http://127.0.0.1:"+proxy.port)
	}
	direct := newHarness(t, "web_fetch", local(map[string]any{"dnsServer": dns.Addr}))
	if out := direct.call(map[string]any{"url": "http://site.test:" + s.port + "/"}); out.IsError || !strings.Contains(out.Content, "direct") || proxied.Load() != 0 {
		t.Fatalf("without a proxy setting: %s (proxy hits %d)", out.Content, proxied.Load())
	}

	via := newHarness(t, "web_fetch", local(map[string]any{"dnsServer": dns.Addr, "proxy": "http://agent:proxy-pw-31337@127.0.0.1:" + proxy.port}))
	out := via.call(map[string]any{"url": "http://site.test:" + s.port + "/x"})
	if out.IsError || !strings.Contains(out.Content, "proxied GET http://site.test:"+s.port+"/x") || proxied.Load() != 1 {
		t.Fatalf("through the proxy: %s", out.Content)
	}
	if strings.Contains(out.Content, "proxy-pw-31337") || strings.Contains(out.Content, base64.StdEncoding.EncodeToString([]byte("agent:proxy-pw-31337"))) {
		t.Fatalf("the proxy credential reached the model: %s", out.Content)
	}
	refused(t, "inner via proxy", via.call(map[string]any{"url": "http://inner.test/"}), "private", "destination inner.test (10.0.0.3) is a private address")
	refused(t, "literal via proxy", via.call(map[string]any{"url": "http://169.254.169.254/"}), "cloud-metadata", "cloud metadata")
	refused(t, "unknown via proxy", via.call(map[string]any{"url": "http://unknown.test/"}), "lookup-failed", "the lookup of unknown.test failed")
	if n := proxied.Load(); n != 1 {
		t.Fatalf("the proxy was asked %d times", n)
	}
}
