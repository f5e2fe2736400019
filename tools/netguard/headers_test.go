package netguard

import "testing"

func TestCheckHeader(t *testing.T) {
	cases := []struct {
		name, value string
		reason      string // "" = allowed
	}{
		{"Accept", "text/html", ""},
		{"User-Agent", "curl/8", ""},
		{"Content-Type", "application/json", ""},
		{"If-None-Match", `"abc"`, ""},
		{"X-Request-Id", "42", ""},
		{"Idempotency-Key", "k-1", ""},
		{"Accept-Language", "fr, en;q=0.5", ""},
		{"Authorization", "Bearer x", "credentials come only from the tool's auth profiles"},
		{"authorization", "Basic eA==", "credentials come only"},
		{"AUTHORIZATION", "x", "credentials come only"},
		{"Proxy-Authorization", "Basic eA==", "addressed to proxies"},
		{"Proxy-Connection", "keep-alive", "addressed to proxies"},
		{"Cookie", "sid=1", "credentials come only"},
		{"Cookie2", "x", "credentials come only"},
		{"Host", "internal.example", "the tool sets it"},
		{"Content-Length", "0", "smuggle"},
		{"Transfer-Encoding", "chunked", "smuggle"},
		{"Connection", "Upgrade", "smuggle"},
		{"Upgrade", "h2c", "smuggle"},
		{"TE", "trailers", "smuggle"},
		{"Expect", "100-continue", "smuggle"},
		{"Accept-Encoding", "gzip", "guard decompression"},
		{"X-Forwarded-For", "127.0.0.1", "forge where the request comes from"},
		{"X-Forwarded-Host", "internal", "forge where"},
		{"x-forwarded-proto", "https", "forge where"},
		{"Forwarded", "for=127.0.0.1", "forge where"},
		{"X-Real-IP", "127.0.0.1", "forge where"},
		{"True-Client-IP", "10.0.0.1", "forge where"},
		{"X-Api-Key", "k", "looks like a credential"},
		{"X_API_KEY", "k", "looks like a credential"},
		{"Api-Key", "k", "looks like a credential"},
		{"X-Auth-Token", "t", "looks like a credential"},
		{"Private-Token", "t", "looks like a credential"},
		{"X-Amz-Security-Token", "t", "looks like a credential"},
		{"X-Vault-Token", "t", "looks like a credential"},
		{"X-Client-Secret", "s", "looks like a credential"},
		{"X-Password", "p", "looks like a credential"},
		{"Ocp-Apim-Subscription-Key", "k", "looks like a credential"},
		{"X-Session-Id", "s", "looks like a credential"},
		// Smuggling through line breaks and control characters.
		{"X-Test", "a\r\nHost: internal", "line break"},
		{"X-Test", "a\nX-Forwarded-For: 127.0.0.1", "line break"},
		{"X-Test", "a\rb", "line break"},
		{"X-Test\r\nAuthorization", "x", "line break"},
		{"X-Test", "a\x00b", "control character"},
		{"X-Test", "a\x7fb", "control character"},
		{"X Test", "a", "not a valid HTTP token"},
		{"X-Test:", "a", "not a valid HTTP token"},
		{"", "a", "not a valid HTTP token"},
	}
	for _, c := range cases {
		rule := RuleHeader
		if c.reason == "" {
			rule = ""
		}
		expect(t, c.name+": "+c.value, CheckHeader(c.name, c.value), rule, c.reason)
	}
}
