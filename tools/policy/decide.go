package policy

import (
	"context"
	"errors"
	"strings"
	"sync"
)

// ErrDenied is the kind of every refusal by a tool policy; the tools
// package names it ErrPolicyDenied.
var ErrDenied = errors.New("permission denied")

// Effect is what a decision lets happen.
type Effect string

// Effects of a Decision.
const (
	Allow Effect = "allow"
	Deny  Effect = "deny"
)

// Decision is what the restrictions of a run say about one tool, and why.
type Decision struct {
	Tool   string `json:"-"`
	Effect Effect `json:"effect"`
	// Layer names the policy that decided: "server", or "node
	// <chain>/<node>" for a node's policy. Empty when no policy applies.
	Layer string `json:"layer,omitempty"`
	// Rule is one of the Rule* constants.
	Rule string `json:"rule,omitempty"`
	// Match is the entry that decided: a group, a name, a glob, or
	// "profile:<name>". Empty for a tool missing from an allow list.
	Match string `json:"match,omitempty"`
	// Inherited is true when the deciding policy belongs to an agent that
	// called this one (directly or through rule chains).
	Inherited bool `json:"inherited,omitempty"`
}

// Allowed reports whether the tool may be used.
func (d Decision) Allowed() bool { return d.Effect != Deny }

// Err is nil when the tool is allowed, and a *Denial otherwise.
func (d Decision) Err() error {
	if d.Allowed() {
		return nil
	}
	return &Denial{Decision: d}
}

// Denial is a refused tool: errors.Is(err, ErrDenied) holds, and
// errors.As gives the Decision.
type Denial struct{ Decision }

func (d *Denial) Unwrap() error { return ErrDenied }

// Error tells the model (and the log) which policy refused the tool and by
// which rule. A group is named; a name or glob is not quoted back, so that
// a refusal does not teach anything about the rest of the list.
func (d *Denial) Error() string {
	var b strings.Builder
	b.WriteString(ErrDenied.Error())
	b.WriteString(": ")
	b.WriteString(d.Tool)
	switch d.Rule {
	case RuleDeny:
		b.WriteString(" is denied by ")
		b.WriteString(d.layerText())
		b.WriteString(matchText(d.Match, " (deny "))
	case RuleSubagentDeny:
		b.WriteString(" is denied to the agents it runs by ")
		b.WriteString(d.layerText())
		b.WriteString(matchText(d.Match, " (subagentDeny "))
	case RuleProfile:
		b.WriteString(" is not part of the ")
		b.WriteString(strings.TrimPrefix(d.Match, "profile:"))
		b.WriteString(" profile of ")
		b.WriteString(d.layerText())
	default:
		b.WriteString(" is not in the allow list of ")
		b.WriteString(d.layerText())
	}
	b.WriteString("; it cannot be used here, do not call it again")
	return b.String()
}

func (d *Denial) layerText() string {
	s := "the tool policy of " + d.Layer
	if d.Layer == LayerServer {
		s = "the server's tool policy"
	}
	if d.Inherited && d.Rule != RuleSubagentDeny {
		s += ", which also binds the agents it runs"
	}
	return s
}

func matchText(match, lead string) string {
	if strings.HasPrefix(match, "group:") {
		return lead + match + ")"
	}
	return lead + "entry)"
}

// LayerServer is the Layer name of the server-wide policy.
const LayerServer = "server"

// NodeLayer is the Layer name of an agent node's policy.
func NodeLayer(chainID, nodeID string) string { return "node " + chainID + "/" + nodeID }

// Restrictions are the policies that apply to one run, in order: those
// inherited from the agents above it, the server's, the node's. A tool must
// be allowed by all of them. The nil *Restrictions restricts nothing. They
// are immutable and safe for concurrent use.
type Restrictions struct {
	layers []layer

	once   sync.Once
	nested *Restrictions
}

type layer struct {
	name string
	p    *Policy
	// subagent: this layer applies only p's subagentDeny list.
	subagent  bool
	inherited bool
}

// With returns the restrictions plus policy p under the given layer name.
// A nil p, or a p already among the restrictions (the server's policy
// inherited from a calling agent), adds nothing.
func (r *Restrictions) With(name string, p *Policy) *Restrictions {
	if p == nil {
		return r
	}
	var layers []layer
	if r != nil {
		for _, l := range r.layers {
			if l.p == p && !l.subagent {
				return r
			}
		}
		layers = r.layers
	}
	out := make([]layer, len(layers), len(layers)+1)
	copy(out, layers)
	return &Restrictions{layers: append(out, layer{name: name, p: p})}
}

// Empty reports whether no policy applies.
func (r *Restrictions) Empty() bool { return r == nil || len(r.layers) == 0 }

// Decide applies every layer to t. The first layer that refuses decides;
// when all allow, the decision names the last layer that allowed t by a
// rule of its own (a profile, an allow list, alsoAllow).
func (r *Restrictions) Decide(t Tool) Decision {
	d := Decision{Tool: t.Name, Effect: Allow, Rule: RuleDefault}
	if r == nil {
		return d
	}
	for _, l := range r.layers {
		if l.subagent {
			if m, hit := l.p.deniedToSubagents(t); hit {
				return Decision{Tool: t.Name, Effect: Deny, Layer: l.name, Rule: RuleSubagentDeny, Match: m, Inherited: true}
			}
			continue
		}
		v := l.p.decide(t)
		if !v.allowed {
			return Decision{Tool: t.Name, Effect: Deny, Layer: l.name, Rule: v.rule, Match: v.match, Inherited: l.inherited}
		}
		if v.rule != RuleDefault || d.Layer == "" {
			d.Layer, d.Rule, d.Match, d.Inherited = l.name, v.rule, v.match, l.inherited
		}
	}
	return d
}

// Nested returns the restrictions the agents this run calls inherit: every
// layer of these, plus each layer's subagentDeny list.
func (r *Restrictions) Nested() *Restrictions {
	if r.Empty() {
		return r
	}
	r.once.Do(func() {
		out := make([]layer, 0, len(r.layers)+1)
		for _, l := range r.layers {
			l.inherited = true
			out = append(out, l)
		}
		for _, l := range r.layers {
			if !l.subagent && l.p.HasSubagentDeny() && !hasSubagentLayer(r.layers, l.p) {
				out = append(out, layer{name: l.name, p: l.p, subagent: true, inherited: true})
			}
		}
		r.nested = &Restrictions{layers: out}
	})
	return r.nested
}

func hasSubagentLayer(layers []layer, p *Policy) bool {
	for _, l := range layers {
		if l.subagent && l.p == p {
			return true
		}
	}
	return false
}

// Layers lists the layer names, in order, for logs and tests; a
// subagentDeny layer is listed as "<name> (subagentDeny)".
func (r *Restrictions) Layers() []string {
	if r == nil {
		return nil
	}
	out := make([]string, len(r.layers))
	for i, l := range r.layers {
		out[i] = l.name
		if l.subagent {
			out[i] += " (subagentDeny)"
		}
	}
	return out
}

type ctxKey struct{}

// WithRestrictions returns ctx carrying r: how a tool call hands its run's
// restrictions (Nested) to the chains and agents it runs.
func WithRestrictions(ctx context.Context, r *Restrictions) context.Context {
	return context.WithValue(ctx, ctxKey{}, r)
}

// FromContext returns the restrictions in ctx, or nil.
func FromContext(ctx context.Context) *Restrictions {
	r, _ := ctx.Value(ctxKey{}).(*Restrictions)
	return r
}
