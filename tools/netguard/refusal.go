// Package netguard decides where an outbound HTTP request may go. It is the
// network half of the web tools' SSRF defence, usable by any tool that
// makes requests on a model's behalf:
//
//   - Classify says what an address is (loopback, private, metadata, ...),
//     reading IPv4-mapped, NAT64, 6to4 and Teredo forms as the IPv4 address
//     they carry;
//   - Policy.CheckURL checks a URL before a request: scheme, credentials in
//     the URL, host allow and deny lists by parsed host, IP literals in
//     every spelling a URL parser accepts (127.1, 0x7f000001, ...);
//   - Policy.DialContext connects only after checking the address it is
//     about to connect to, after name resolution, for every connection, so
//     DNS rebinding between a check and a use is impossible;
//   - Policy.CheckRedirect re-checks every redirect and bounds them;
//   - CheckHeader refuses caller headers that carry credentials, spoof the
//     client's address, smuggle requests or break lines.
//
// Every refusal is a *Refusal naming its rule; errors.Is(err,
// tools.ErrPolicyDenied) holds for it.
package netguard

import (
	"fmt"

	"github.com/ruleagent/ruleagent/tools"
)

// Rule names a refusal's reason. The names are stable: tests, logs and
// audit records use them.
type Rule string

// Rules.
const (
	RuleLoopback    Rule = "loopback"
	RulePrivate     Rule = "private"
	RuleLinkLocal   Rule = "link-local"
	RuleCGNAT       Rule = "cgnat"
	RuleUnspecified Rule = "unspecified"
	RuleMulticast   Rule = "multicast"
	RuleBroadcast   Rule = "broadcast"
	RuleMetadata    Rule = "cloud-metadata"
	RuleReserved    Rule = "reserved"
	// RuleIPForm: an IPv4 literal in a spelling other than dotted decimal.
	RuleIPForm Rule = "ip-literal-form"
	// RuleLookup: the name could not be resolved, so it cannot be checked.
	RuleLookup Rule = "lookup-failed"
	// RuleScheme: not http or https.
	RuleScheme Rule = "scheme"
	// RuleUserinfo: credentials written into the URL.
	RuleUserinfo Rule = "userinfo"
	// RuleMalformed: a URL or host that does not parse as one.
	RuleMalformed Rule = "malformed-url"
	// RuleHostDenied: the host is on the deny list.
	RuleHostDenied Rule = "host-denied"
	// RuleHostNotAllowed: an allow list is set and the host is not on it.
	RuleHostNotAllowed Rule = "host-not-allowed"
	// RuleRedirects: more redirects than allowed.
	RuleRedirects Rule = "redirect-limit"
	// RuleHeader: a caller header the policy refuses.
	RuleHeader Rule = "header"
)

// OpenedByAllowPrivate reports whether listing an address in
// Config.AllowPrivate lifts this rule for it.
func (r Rule) OpenedByAllowPrivate() bool {
	switch r {
	case RuleLoopback, RulePrivate, RuleLinkLocal, RuleCGNAT, RuleReserved:
		return true
	}
	return false
}

// Refusal is a request the policy refused. Its text names the rule and the
// destination, never the pattern of a deny list that matched.
type Refusal struct {
	Rule   Rule
	Reason string
}

func (r *Refusal) Error() string { return r.Reason }

// Is makes errors.Is(err, tools.ErrPolicyDenied) true for refusals.
func (r *Refusal) Is(target error) bool { return target == tools.ErrPolicyDenied }

func refuse(rule Rule, format string, args ...any) *Refusal {
	return &Refusal{Rule: rule, Reason: fmt.Sprintf(format, args...)}
}
