package netguard

import (
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Why a header is refused, by its lower-case name.
const (
	whyCredential = "credentials come only from the tool's auth profiles"
	whyFraming    = "the tool sets it (framing and connection headers could smuggle a second request)"
	whyOrigin     = "it would forge where the request comes from"
	whyProxy      = "it is addressed to proxies"
)

var refusedHeaders = map[string]string{
	"authorization":       whyCredential,
	"proxy-authorization": whyProxy,
	"cookie":              whyCredential,
	"cookie2":             whyCredential,
	"host":                whyFraming,
	"content-length":      whyFraming,
	"transfer-encoding":   whyFraming,
	"connection":          whyFraming,
	"keep-alive":          whyFraming,
	"te":                  whyFraming,
	"trailer":             whyFraming,
	"upgrade":             whyFraming,
	"expect":              whyFraming,
	"accept-encoding":     "the tool sets it, to guard decompression",
	"forwarded":           whyOrigin,
	"via":                 whyOrigin,
	"x-real-ip":           whyOrigin,
	"x-client-ip":         whyOrigin,
	"client-ip":           whyOrigin,
	"true-client-ip":      whyOrigin,
	"x-originating-ip":    whyOrigin,
	"x-remote-ip":         whyOrigin,
	"x-remote-addr":       whyOrigin,
	"x-cluster-client-ip": whyOrigin,
	"cf-connecting-ip":    whyOrigin,
	"fastly-client-ip":    whyOrigin,
}

// credentialWords mark a header name as carrying a credential, looked for
// in the lower-case name with '-' and '_' removed (X-Api-Key, X_AUTH_TOKEN,
// Private-Token, X-Amz-Security-Token, Ocp-Apim-Subscription-Key).
var credentialWords = []string{"auth", "token", "secret", "passw", "apikey", "accesskey", "secretkey",
	"privatekey", "subscriptionkey", "credential", "session", "cookie", "signature"}

// IsFramingHeader reports a header that frames the request or manages the
// connection (Host, Content-Length, Transfer-Encoding, Connection, ...):
// no configuration may set it either.
func IsFramingHeader(name string) bool {
	return refusedHeaders[strings.ToLower(name)] == whyFraming
}

var squeeze = strings.NewReplacer("-", "", "_", "")

// CheckHeader refuses a header a caller (the model) may not set: any name
// or value with CR, LF or another control character; Authorization,
// Cookie and every credential-like name; Host and the framing and
// connection headers; Proxy-*; X-Forwarded-*, Forwarded and the other
// client-address headers. Credentials reach a request only from
// configuration.
func CheckHeader(name, value string) *Refusal {
	if strings.ContainsAny(name, "\r\n") {
		return refuse(RuleHeader, "a header name contains a line break (CR or LF)")
	}
	if !httpguts.ValidHeaderFieldName(name) {
		return refuse(RuleHeader, "header name %q is not a valid HTTP token", name)
	}
	if strings.ContainsAny(value, "\r\n") {
		return refuse(RuleHeader, "header %s: its value contains a line break (CR or LF)", name)
	}
	if !httpguts.ValidHeaderFieldValue(value) {
		return refuse(RuleHeader, "header %s: its value contains a control character", name)
	}
	lower := strings.ToLower(name)
	if why, ok := refusedHeaders[lower]; ok {
		return refuse(RuleHeader, "header %s is refused: %s", name, why)
	}
	switch {
	case strings.HasPrefix(lower, "proxy-"):
		return refuse(RuleHeader, "header %s is refused: %s", name, whyProxy)
	case strings.HasPrefix(lower, "x-forwarded-"):
		return refuse(RuleHeader, "header %s is refused: %s", name, whyOrigin)
	}
	squeezed := squeeze.Replace(lower)
	for _, w := range credentialWords {
		if strings.Contains(squeezed, w) {
			return refuse(RuleHeader, "header %s is refused: it looks like a credential, and %s", name, whyCredential)
		}
	}
	return nil
}
