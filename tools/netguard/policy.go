package netguard

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/ruleagent/ruleagent/tools"
)

// DefaultMaxRedirects is how many redirects a request follows by default,
// and the most a config may allow.
const DefaultMaxRedirects = 5

// Config is the network policy as tools configure it. The zero value is
// the safe default: public addresses only, no host list, 5 redirects, no
// proxy, the system's resolver.
type Config struct {
	AllowHosts   []string `json:"allowHosts,omitempty" jsonschema:"If set, only these hosts may be requested: exact host names or IP addresses, or *.domain for every sub-domain of domain (not the domain itself). Matched on the parsed host, never on a prefix of the URL."`
	DenyHosts    []string `json:"denyHosts,omitempty" jsonschema:"Hosts never requested, in the same forms as allowHosts. Deny wins over allow."`
	AllowPrivate []string `json:"allowPrivate,omitempty" jsonschema:"Address ranges (CIDR, or single addresses) that may be reached although they are loopback, private, link-local, CGNAT or reserved, e.g. an intranet or a local test server. Cloud metadata, unspecified, multicast and broadcast addresses stay refused whatever is listed."`
	MaxRedirects *int     `json:"maxRedirects,omitempty" jsonschema:"Redirects followed per request, 0 to 5 (default 5); each one is checked like the first request."`
	Proxy        string   `json:"proxy,omitempty" jsonschema:"http(s) URL of a forward proxy for every request. The HTTP_PROXY and HTTPS_PROXY variables are ignored; without this field no proxy is used."`
	DNSServer    string   `json:"dnsServer,omitempty" jsonschema:"IP:port of the DNS server to resolve names with, instead of the system's resolvers (/etc/hosts is still read first)."`
}

// Policy is a compiled Config. It is immutable and safe for concurrent use.
type Policy struct {
	allow, deny  HostList
	allowPrivate []netip.Prefix
	maxRedirects int
	proxy        *url.URL
	proxyAddr    string // host:port the transport dials for the proxy
	resolver     *net.Resolver
}

// New compiles c. Errors are *tools.ConfigError naming the field.
func New(c Config) (*Policy, error) {
	p := &Policy{maxRedirects: DefaultMaxRedirects}
	var i int
	var msg string
	if p.allow, i, msg = ParseHostList(c.AllowHosts); msg != "" {
		return nil, &tools.ConfigError{Path: fmt.Sprintf("allowHosts[%d]", i), Msg: msg}
	}
	if p.deny, i, msg = ParseHostList(c.DenyHosts); msg != "" {
		return nil, &tools.ConfigError{Path: fmt.Sprintf("denyHosts[%d]", i), Msg: msg}
	}
	for i, s := range c.AllowPrivate {
		pf, err := parsePrefix(s)
		if err != nil {
			return nil, &tools.ConfigError{Path: fmt.Sprintf("allowPrivate[%d]", i), Msg: err.Error(), Err: err}
		}
		p.allowPrivate = append(p.allowPrivate, pf)
	}
	if c.MaxRedirects != nil {
		if *c.MaxRedirects < 0 || *c.MaxRedirects > DefaultMaxRedirects {
			return nil, &tools.ConfigError{Path: "maxRedirects", Msg: fmt.Sprintf("must be 0 to %d", DefaultMaxRedirects)}
		}
		p.maxRedirects = *c.MaxRedirects
	}
	if c.Proxy != "" {
		if err := p.setProxy(c.Proxy); err != nil {
			return nil, &tools.ConfigError{Path: "proxy", Msg: err.Error(), Err: err}
		}
	}
	if c.DNSServer != "" {
		r, err := newResolver(c.DNSServer)
		if err != nil {
			return nil, &tools.ConfigError{Path: "dnsServer", Msg: err.Error(), Err: err}
		}
		p.resolver = r
	}
	if p.resolver == nil {
		// The pure Go resolver reads names the same way on every
		// platform (no libc inet_aton reading "127.1" as an address).
		p.resolver = &net.Resolver{PreferGo: true}
	}
	return p, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		pf, err := netip.ParsePrefix(s)
		if err != nil {
			return pf, fmt.Errorf("%q is not a CIDR range", s)
		}
		if pf != pf.Masked() {
			return pf, fmt.Errorf("%q has bits set after the prefix; write %s", s, pf.Masked())
		}
		return pf, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address or a CIDR range", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func (p *Policy) setProxy(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("want an http:// or https:// proxy URL")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("a proxy URL has no path, query or fragment")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	p.proxy, p.proxyAddr = u, net.JoinHostPort(u.Hostname(), port)
	return nil
}

// ProxySecrets are the proxy URL's password and the Proxy-Authorization
// token made from it, if any, for the scrubber.
func (p *Policy) ProxySecrets() []string {
	if p.proxy == nil || p.proxy.User == nil {
		return nil
	}
	pw, ok := p.proxy.User.Password()
	if !ok || pw == "" {
		return nil
	}
	return []string{pw, base64.StdEncoding.EncodeToString([]byte(p.proxy.User.Username() + ":" + pw))}
}

// CheckAddr refuses an address the policy does not let a connection reach.
// host, if not empty, is the name that resolved to it, for the message.
func (p *Policy) CheckAddr(ip netip.Addr, host string) *Refusal {
	v := Classify(ip)
	if v.Class == Public {
		return nil
	}
	if v.Class.liftable() && p.allowedPrivate(ip) {
		return nil
	}
	return addrRefusal(ip, host, v)
}

func (p *Policy) allowedPrivate(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	for _, pf := range p.allowPrivate {
		if pf.Contains(ip) {
			return true
		}
	}
	return false
}

func addrRefusal(ip netip.Addr, host string, v Verdict) *Refusal {
	dest := ip.String()
	if host != "" && host != dest {
		dest = host + " (" + dest + ")"
	}
	if v.Form != "" {
		return refuse(v.Class.Rule(), "destination %s is %s form of %s, %s", dest, article(v.Form), v.Embedded, v.Class)
	}
	return refuse(v.Class.Rule(), "destination %s is %s", dest, v.Class)
}

// article puts "a" or "an" before an IPv6 form's name, as it is read aloud
// ("an IPv4-mapped", "an NAT64", "a 6to4", "a Teredo").
func article(form string) string {
	if strings.HasPrefix(form, "I") || strings.HasPrefix(form, "N") {
		return "an " + form
	}
	return "a " + form
}

// MaxURLLength is the longest URL ParseURL accepts.
const MaxURLLength = 8 << 10

// ParseURL parses a URL a caller gave. It refuses what parsers disagree
// on or what could split a request line: control characters (CR, LF, tab,
// NUL...), spaces and backslashes, which the WHATWG standard reads as "/"
// in http URLs and net/url does not.
func ParseURL(raw string) (*url.URL, *Refusal) {
	if len(raw) > MaxURLLength {
		return nil, refuse(RuleMalformed, "the URL is longer than %d bytes", MaxURLLength)
	}
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '\r' || c == '\n':
			return nil, refuse(RuleMalformed, "the URL contains a line break (CR or LF)")
		case c < 0x20 || c == 0x7f:
			return nil, refuse(RuleMalformed, "the URL contains a control character")
		case c == ' ':
			return nil, refuse(RuleMalformed, "the URL contains a space; percent-encode it as %%20")
		case c == '\\':
			return nil, refuse(RuleMalformed, "the URL contains a backslash, which URL parsers read differently; percent-encode it as %%5C")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, refuse(RuleMalformed, "the URL does not parse: %v", err)
	}
	return u, nil
}

// CheckURL checks a URL before any request is made for it: the scheme is
// http or https, it carries no credentials, its host parses, passes the
// deny and allow lists and is not a metadata service, and an IP literal
// (in any spelling) is an address the policy lets a connection reach.
// Names are checked again, by address, when each connection is made.
func (p *Policy) CheckURL(u *url.URL) (Host, *Refusal) {
	if u.Scheme != "http" && u.Scheme != "https" {
		return Host{}, refuse(RuleScheme, "only http and https URLs may be requested, not %q", u.Scheme+":")
	}
	if u.User != nil {
		return Host{}, refuse(RuleUserinfo, "the URL carries credentials (user:password@); they are never sent")
	}
	if u.Opaque != "" {
		return Host{}, refuse(RuleMalformed, "the URL has no //host part")
	}
	if port := u.Port(); port != "" {
		if n, err := parsePort(port); err != nil || n == 0 {
			return Host{}, refuse(RuleMalformed, "port %q is not a valid port", port)
		}
	}
	h, r := ParseHost(u.Hostname())
	if r != nil {
		return h, r
	}
	if p.deny.Match(h.Name) {
		return h, refuse(RuleHostDenied, "host %s is on the tool's deny list", h.Name)
	}
	if !p.allow.Empty() && !p.allow.Match(h.Name) {
		return h, refuse(RuleHostNotAllowed, "host %s is not on the tool's allow list", h.Name)
	}
	if metadataNames[h.Name] {
		return h, refuse(RuleMetadata, "host %s is a cloud metadata service", h.Name)
	}
	if !h.IP.IsValid() {
		return h, nil
	}
	if r := p.CheckAddr(h.IP, ""); r != nil {
		if h.NonCanonical {
			v := Classify(h.IP)
			r.Reason = fmt.Sprintf("destination %s is %s written in a non-canonical form, %s", h.Written, h.IP, v.Class)
		}
		return h, r
	}
	if h.NonCanonical {
		return h, refuse(RuleIPForm, "host %s is an IPv4 address in a non-canonical form; write it as %s", h.Written, h.IP)
	}
	return h, nil
}

func parsePort(s string) (int, error) {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' || n > 65535 {
			return 0, fmt.Errorf("bad port")
		}
		n = n*10 + int(s[i]-'0')
	}
	if n > 65535 {
		return 0, fmt.Errorf("bad port")
	}
	return n, nil
}
