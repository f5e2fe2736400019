// Package policy decides which tools an agent may use: the tool policy of
// an ai/agent node, of the whole server, and the restrictions a calling
// agent hands down to the sub-agents and rule chains it runs.
//
// A policy is {profile, allow, deny, alsoAllow, subagentDeny}. Entries are
// tool names as the model sees them, globs over those names (`web_*`), or
// groups (`group:fs`, `group:mcp:github`). The rules:
//
//   - deny is final: a tool a deny entry matches is refused, whatever else
//     the policy or any other layer says;
//   - the profile and the allow list each narrow what is allowed (a tool must
//     be in both when both are given); an explicitly empty allow list allows
//     nothing; no profile and no allow list allow every tool;
//   - alsoAllow adds tools on top of the profile and the allow list, never
//     over a deny;
//   - an unknown profile or group, or a malformed entry, is a configuration
//     error: a policy never falls back to open.
//
// Several policies apply to one run (Restrictions): the server's, the
// node's, and those inherited from the agents above it. A tool must be
// allowed by every one of them, so a lower layer can only narrow.
//
// The package knows nothing of the tools package; the wrapper and the tool
// set describe each tool to it as a Tool.
package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ruleagent/ruleagent/configerr"
)

// Spec is a tool policy as it is written in a node's configuration or in
// the server's --policy.
type Spec struct {
	// Profile is a named starting set: full, coding, readonly or minimal.
	// Empty means no profile (every tool).
	Profile string `json:"profile,omitempty"`
	// Allow, when given, lets only the tools it matches through (within
	// the profile). A nil Allow is absent; an empty one allows nothing.
	Allow *[]string `json:"allow,omitempty"`
	// Deny refuses the tools it matches, finally.
	Deny []string `json:"deny,omitempty"`
	// AlsoAllow adds tools on top of the profile and the allow list.
	AlsoAllow []string `json:"alsoAllow,omitempty"`
	// SubagentDeny refuses the tools it matches to every agent this one
	// runs, directly or through rule chains, at any depth.
	SubagentDeny []string `json:"subagentDeny,omitempty"`
}

// Policy is a compiled Spec. It is immutable and safe for concurrent use.
type Policy struct {
	spec         Spec
	profile      *profile
	allow        []entry // nil: no allow list
	allowGiven   bool
	deny         []entry
	alsoAllow    []entry
	subagentDeny []entry
}

// ConfigError is a mistake in a policy, located by its field, for example
// `deny[2]`; an empty Path is the policy object itself. It is
// configerr.Error, the one error type of every configuration parser.
type ConfigError = configerr.Error

// Parse decodes and compiles a policy given as JSON. Unknown fields are
// errors; an empty or null value is no policy (nil, nil).
func Parse(raw []byte) (*Policy, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s Spec
	if err := configerr.Decode(raw, &s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, &ConfigError{Path: te.Field, Msg: fmt.Sprintf("must be %s", jsonKind(te.Field)), Err: err}
		}
		return nil, err
	}
	return Compile(s)
}

func jsonKind(field string) string {
	if field == "profile" {
		return "a string"
	}
	return "an array of strings"
}

// Compile checks s and compiles it. Every mistake is a *ConfigError.
func Compile(s Spec) (*Policy, error) {
	p := &Policy{spec: s}
	if s.Profile != "" {
		pr, ok := profiles[s.Profile]
		if !ok {
			return nil, &ConfigError{Path: "profile", Msg: fmt.Sprintf("unknown profile %q (profiles: %s)", s.Profile, strings.Join(ProfileNames(), ", "))}
		}
		p.profile = pr
	}
	var err error
	if s.Allow != nil {
		p.allowGiven = true
		if p.allow, err = compileList("allow", *s.Allow, false); err != nil {
			return nil, err
		}
	}
	if p.deny, err = compileList("deny", s.Deny, true); err != nil {
		return nil, err
	}
	if p.alsoAllow, err = compileList("alsoAllow", s.AlsoAllow, false); err != nil {
		return nil, err
	}
	if p.subagentDeny, err = compileList("subagentDeny", s.SubagentDeny, true); err != nil {
		return nil, err
	}
	return p, nil
}

func compileList(field string, list []string, deny bool) ([]entry, error) {
	out := make([]entry, 0, len(list))
	for i, s := range list {
		e, err := compileEntry(s, deny)
		if err != nil {
			return nil, &ConfigError{Path: fmt.Sprintf("%s[%d]", field, i), Msg: err.Error(), Err: err}
		}
		out = append(out, e)
	}
	return out, nil
}

// Spec returns the policy as it was written.
func (p *Policy) Spec() Spec { return p.spec }

// HasSubagentDeny reports whether the policy restricts the agents it runs
// beyond itself.
func (p *Policy) HasSubagentDeny() bool { return p != nil && len(p.subagentDeny) > 0 }

// verdict is one policy's answer about one tool.
type verdict struct {
	allowed bool
	rule    string
	match   string
}

// Rules a Decision names.
const (
	// RuleDeny: a deny entry matched.
	RuleDeny = "deny"
	// RuleSubagentDeny: a caller's subagentDeny entry matched.
	RuleSubagentDeny = "subagentDeny"
	// RuleAllow: the tool is (or, in a denial, is not) in the allow list.
	RuleAllow = "allow"
	// RuleProfile: the tool is (or is not) in the profile.
	RuleProfile = "profile"
	// RuleAlsoAllow: an alsoAllow entry let the tool through.
	RuleAlsoAllow = "alsoAllow"
	// RuleDefault: the policy names neither a profile nor an allow list,
	// which allows every tool it does not deny.
	RuleDefault = "default"
)

// decide applies one policy to t: deny first and finally, then the profile
// and the allow list (both must hold), then alsoAllow.
func (p *Policy) decide(t Tool) verdict {
	for i := range p.deny {
		if p.deny[i].matches(t) {
			return verdict{rule: RuleDeny, match: p.deny[i].raw}
		}
	}
	base := verdict{allowed: true, rule: RuleDefault}
	if p.profile != nil {
		base = verdict{allowed: p.profile.matches(t), rule: RuleProfile, match: "profile:" + p.profile.name}
	}
	if base.allowed && p.allowGiven {
		base = verdict{rule: RuleAllow}
		for i := range p.allow {
			if p.allow[i].matches(t) {
				base = verdict{allowed: true, rule: RuleAllow, match: p.allow[i].raw}
				break
			}
		}
	}
	if base.allowed {
		return base
	}
	for i := range p.alsoAllow {
		if p.alsoAllow[i].matches(t) {
			return verdict{allowed: true, rule: RuleAlsoAllow, match: p.alsoAllow[i].raw}
		}
	}
	return base
}

// deniedToSubagents reports the subagentDeny entry that matches t, if any.
func (p *Policy) deniedToSubagents(t Tool) (string, bool) {
	for i := range p.subagentDeny {
		if p.subagentDeny[i].matches(t) {
			return p.subagentDeny[i].raw, true
		}
	}
	return "", false
}
