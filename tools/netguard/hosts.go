package netguard

import (
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// Host is a URL's host, parsed and normalised the way a request would use
// it.
type Host struct {
	// Name is the normalised host: lower-case ASCII (IDNA) without a
	// trailing dot, or the canonical text of an IP literal.
	Name string
	// IP is valid when the host is an IP literal, in any spelling.
	IP netip.Addr
	// Written is the host as the URL wrote it, for messages.
	Written string
	// NonCanonical: an IPv4 literal spelled other than in dotted decimal
	// (127.1, 0x7f000001, 017700000001, 127.000.000.001).
	NonCanonical bool
}

// idnaProfile maps a name as a resolver would look it up. STD3 rules are
// off so that underscores pass; checkName then allows only letters,
// digits, '-' and '_' in each label.
var idnaProfile = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.Transitional(false),
	idna.StrictDomainName(false), idna.VerifyDNSLength(true))

// ParseHost normalises a host as written in a URL (net/url's Hostname:
// no brackets, no port). IPv4 literals are read the way the WHATWG URL
// standard, browsers and curl read them, so a host such as 2130706433 is
// known to be 127.0.0.1 before anything resolves it.
func ParseHost(written string) (Host, *Refusal) {
	h := Host{Written: written}
	if written == "" {
		return h, refuse(RuleMalformed, "the URL has no host")
	}
	if strings.Contains(written, ":") {
		ip, err := netip.ParseAddr(written)
		if err != nil || !ip.Is6() {
			return h, refuse(RuleMalformed, "host %q is not a valid IPv6 address", written)
		}
		h.IP, h.Name = ip, ip.WithZone("").String()
		return h, nil
	}
	name := strings.ToLower(written)
	name = strings.TrimSuffix(name, ".")
	if name == "" || strings.HasSuffix(name, ".") {
		return h, refuse(RuleMalformed, "host %q is not a valid host name", written)
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		h.IP, h.Name = ip, ip.String()
		return h, nil
	}
	if endsInNumber(name) {
		ip, ok := parseLooseIPv4(name)
		if !ok {
			return h, refuse(RuleMalformed, "host %q looks like an IPv4 address but is not a valid one", written)
		}
		h.IP, h.Name, h.NonCanonical = ip, ip.String(), true
		return h, nil
	}
	ascii, err := idnaProfile.ToASCII(name)
	if err != nil || !checkName(ascii) {
		return h, refuse(RuleMalformed, "host %q is not a valid host name", written)
	}
	h.Name = ascii
	return h, nil
}

// checkName accepts a host name of letters, digits, '-' and '_' in labels
// of 1 to 63 characters, 253 at most in all.
func checkName(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if len(label) == 0 || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// endsInNumber is the WHATWG URL standard's test for a host that must be
// read as an IPv4 address: its last label is a decimal or 0x-hex number.
func endsInNumber(name string) bool {
	last := name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		last = name[i+1:]
	}
	if last == "" {
		return false
	}
	if allDigits(last) {
		return true
	}
	_, ok := parseLooseNumber(last)
	return ok
}

// parseLooseIPv4 is the WHATWG IPv4 parser: one to four parts, each
// decimal, octal (leading 0) or hex (0x); the last part fills the bytes
// the others leave.
func parseLooseIPv4(name string) (netip.Addr, bool) {
	parts := strings.Split(name, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseLooseNumber(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return from32(uint32(v)), true
}

func parseLooseNumber(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		s, base = s[2:], 16
		if s == "" {
			return 0, true
		}
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	if len(s) > 32 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, 64)
	return n, err == nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// metadataNames are the host names of cloud metadata services. They are
// refused by name as well as by address: a proxy or a split-horizon DNS
// may resolve them where this process cannot see.
var metadataNames = map[string]bool{
	"metadata":                     true,
	"metadata.google.internal":     true,
	"metadata.goog":                true,
	"metadata.azure.internal":      true,
	"instance-data":                true,
	"instance-data.ec2.internal":   true,
	"metadata.tencentyun.com":      true,
	"metadata.packet.net":          true,
	"metadata.platformequinix.com": true,
}

// Pattern is one host pattern: an exact host ("example.com",
// "203.0.113.5") or, with Wildcard, every sub-domain of Name
// ("*.example.com", which does not match example.com itself).
type Pattern struct {
	Name     string
	Wildcard bool
}

// ParsePattern parses a host pattern; a bad one gives a message saying
// what is wrong with it.
func ParsePattern(p string) (Pattern, string) {
	rest, wild := strings.CutPrefix(p, "*.")
	if rest == "" {
		return Pattern{}, "empty host pattern"
	}
	if strings.ContainsAny(rest, "*/@?#\\ \t") || strings.Contains(rest, "://") {
		return Pattern{}, "want a host name, \"*.\" and a domain, or an IP address (no scheme, path, port or user)"
	}
	if strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]") {
		rest = rest[1 : len(rest)-1]
	}
	h, r := ParseHost(rest)
	switch {
	case r != nil:
		return Pattern{}, r.Reason
	case h.NonCanonical:
		return Pattern{}, "write an IPv4 address in dotted decimal (" + h.Name + ")"
	case wild && h.IP.IsValid():
		return Pattern{}, "\"*.\" takes a domain, not an IP address"
	}
	return Pattern{Name: h.Name, Wildcard: wild}, ""
}

// Match reports whether a normalised host name (Host.Name) matches. A
// wildcard matches on a dot boundary, never on a bare suffix.
func (p Pattern) Match(name string) bool {
	if !p.Wildcard {
		return name == p.Name
	}
	return len(name) > len(p.Name)+1 && strings.HasSuffix(name, p.Name) && name[len(name)-len(p.Name)-1] == '.'
}

// HostList matches hosts against patterns on the parsed, normalised host,
// never on a string prefix of the URL.
type HostList struct {
	exact    map[string]struct{}
	suffixes []string // ".example.com"
}

// ParseHostList parses patterns. A bad pattern's message is returned
// with its index.
func ParseHostList(patterns []string) (HostList, int, string) {
	l := HostList{exact: map[string]struct{}{}}
	for i, s := range patterns {
		p, msg := ParsePattern(s)
		if msg != "" {
			return l, i, msg
		}
		if p.Wildcard {
			l.suffixes = append(l.suffixes, "."+p.Name)
		} else {
			l.exact[p.Name] = struct{}{}
		}
	}
	return l, -1, ""
}

// Empty reports whether the list has no pattern.
func (l HostList) Empty() bool { return len(l.exact) == 0 && len(l.suffixes) == 0 }

// Match reports whether the normalised host name matches a pattern.
func (l HostList) Match(name string) bool {
	if _, ok := l.exact[name]; ok {
		return true
	}
	for _, s := range l.suffixes {
		if len(name) > len(s) && strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}
