package web

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/netguard"
)

// AuthProfile is a named credential the tool attaches to requests for the
// hosts it lists. The model never sees or chooses it: it only names URLs.
type AuthProfile struct {
	Hosts     []string   `json:"hosts" jsonschema:"Hosts the credential is sent to: exact host names or *.domain for every sub-domain. The most specific match wins; nothing is sent to other hosts, redirects included."`
	Bearer    string     `json:"bearer,omitempty" jsonschema:"A token, sent as Authorization: Bearer <token>."`
	Basic     *BasicAuth `json:"basic,omitempty" jsonschema:"A user name and password, sent as HTTP basic authentication."`
	Header    string     `json:"header,omitempty" jsonschema:"The name of the header carrying the credential (X-Api-Key, for example), with value."`
	Value     string     `json:"value,omitempty" jsonschema:"The header's value."`
	AllowHTTP bool       `json:"allowHTTP,omitempty" jsonschema:"Also send the credential over plain http (a service on the local network). Off: it goes over https only, and a plain http request to these hosts is refused."`
}

// BasicAuth is a user name and password.
type BasicAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// RuleAuthOverHTTP refuses a plain http request to a host that has a
// credential, unless its profile allows http.
const RuleAuthOverHTTP netguard.Rule = "auth-over-http"

type authEntry struct {
	pattern   netguard.Pattern
	profile   string
	header    string
	value     string
	allowHTTP bool
}

// authSet is the compiled auth profiles.
type authSet struct {
	entries []authEntry
}

// compileAuth checks the profiles and registers their secret values with
// the scrubber, so that they never appear in any output of the run.
func compileAuth(profiles map[string]AuthProfile, secrets tools.SecretRegistrar) (authSet, error) {
	var s authSet
	seen := map[netguard.Pattern]string{}
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		p := profiles[name]
		at := "auth." + name
		header, value, secret, err := p.credential()
		if err != nil {
			return s, &tools.ConfigError{Path: at, Msg: err.Error(), Err: err}
		}
		if len(p.Hosts) == 0 {
			return s, &tools.ConfigError{Path: at + ".hosts", Msg: "list the hosts this credential is sent to"}
		}
		for i, h := range p.Hosts {
			pat, msg := netguard.ParsePattern(h)
			if msg != "" {
				return s, &tools.ConfigError{Path: fmt.Sprintf("%s.hosts[%d]", at, i), Msg: msg}
			}
			if other, dup := seen[pat]; dup {
				return s, &tools.ConfigError{Path: fmt.Sprintf("%s.hosts[%d]", at, i), Msg: "profile " + other + " already covers this host"}
			}
			seen[pat] = name
			s.entries = append(s.entries, authEntry{pattern: pat, profile: name, header: header, value: value, allowHTTP: p.AllowHTTP})
		}
		if secrets != nil {
			secrets.AddSecrets(secret...)
		}
	}
	return s, nil
}

// credential is the header the profile sends and the values to scrub.
func (p AuthProfile) credential() (header, value string, secrets []string, err error) {
	kinds := 0
	if p.Bearer != "" {
		kinds++
		header, value, secrets = "Authorization", "Bearer "+p.Bearer, []string{p.Bearer}
	}
	if p.Basic != nil {
		kinds++
		if p.Basic.Username == "" || strings.Contains(p.Basic.Username, ":") {
			return "", "", nil, fmt.Errorf("basic.username must be set and hold no ':'")
		}
		token := base64.StdEncoding.EncodeToString([]byte(p.Basic.Username + ":" + p.Basic.Password))
		header, value, secrets = "Authorization", "Basic "+token, []string{token, p.Basic.Password}
	}
	if p.Header != "" || p.Value != "" {
		kinds++
		switch {
		case !httpguts.ValidHeaderFieldName(p.Header):
			return "", "", nil, fmt.Errorf("header %q is not a valid header name", p.Header)
		case netguard.IsFramingHeader(p.Header):
			return "", "", nil, fmt.Errorf("header %s frames the request; a credential cannot go there", p.Header)
		case p.Value == "" || !httpguts.ValidHeaderFieldValue(p.Value):
			return "", "", nil, fmt.Errorf("value must be set, without line breaks or control characters")
		}
		header, value, secrets = p.Header, p.Value, []string{p.Value}
	}
	if kinds != 1 {
		return "", "", nil, fmt.Errorf("give exactly one of bearer, basic, or header with value")
	}
	if !httpguts.ValidHeaderFieldValue(value) {
		return "", "", nil, fmt.Errorf("the credential holds line breaks or control characters")
	}
	return header, value, secrets, nil
}

// match finds the most specific entry for a host: an exact host before a
// wildcard, a longer domain before a shorter one.
func (s authSet) match(host string) *authEntry {
	var best *authEntry
	for i := range s.entries {
		e := &s.entries[i]
		if !e.pattern.Match(host) {
			continue
		}
		if best == nil || specificity(e.pattern) > specificity(best.pattern) {
			best = e
		}
	}
	return best
}

func specificity(p netguard.Pattern) int {
	if !p.Wildcard {
		return 1 << 20
	}
	return len(p.Name)
}

// authTransport attaches a profile's credential to each request, the
// first and every redirect alike, by the request's own host. net/http
// copies the first request's headers to redirects; those never hold a
// credential, because it is only ever added to the copy sent here.
type authTransport struct {
	auth authSet
	next http.RoundTripper
}

func (t authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.auth.entries) == 0 {
		return t.next.RoundTrip(req)
	}
	h, r := netguard.ParseHost(req.URL.Hostname())
	if r != nil {
		closeBody(req)
		return nil, r
	}
	e := t.auth.match(h.Name)
	if e == nil {
		return t.next.RoundTrip(req)
	}
	if req.URL.Scheme != "https" && !e.allowHTTP {
		closeBody(req)
		return nil, &netguard.Refusal{Rule: RuleAuthOverHTTP,
			Reason: fmt.Sprintf("host %s has a credential (auth profile %s), which is only sent over https; request https://%s", h.Name, e.profile, req.URL.Host)}
	}
	req = req.Clone(req.Context())
	req.Header.Set(e.header, e.value)
	return t.next.RoundTrip(req)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
