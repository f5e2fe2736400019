package ledger

import (
	"strings"
	"sync"
)

// Prometheus labels must stay few: a model name comes from the provider's
// answer and a chain id from the chains folder, so neither is trusted to
// be bounded. A priced model is labelled by its price entry (the
// operator's words); others, and chains, by their name, cleaned and cut,
// up to a number of distinct values past which they are "other". No user,
// thread or run id is ever a label.
const (
	maxModelLabels = 32
	maxChainLabels = 256
	maxLabelLen    = 64
	otherLabel     = "other"
)

type labeler struct {
	mu     sync.Mutex
	models map[string]string
	chains map[string]string
}

// model is the label of a call's model.
func (b *labeler) model(p *Price, model string) string {
	if p != nil {
		return p.Model
	}
	return b.bounded(&b.models, model, maxModelLabels)
}

// chain is the label of a chain.
func (b *labeler) chain(id string) string { return b.bounded(&b.chains, id, maxChainLabels) }

func (b *labeler) bounded(set *map[string]string, v string, max int) string {
	if len(v) > maxLabelLen {
		v = v[:maxLabelLen]
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if *set == nil {
		*set = map[string]string{}
	}
	if l, ok := (*set)[v]; ok {
		return l
	}
	if len(*set) >= max {
		return otherLabel
	}
	l := cleanLabel(v)
	(*set)[v] = l
	return l
}

// cleanLabel keeps letters, digits and . _ - : / @ + of v, replacing
// anything else with _ (v is cut to maxLabelLen bytes already).
func cleanLabel(v string) string {
	if v == "" {
		return "none"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._-:/@+", r):
			return r
		}
		return '_'
	}, v)
}

// toolTypeLabel is a tool type, one of a known few.
func toolTypeLabel(t string) string {
	switch t {
	case "builtin", "rulechain", "agent", "mcp", "client":
		return t
	case "":
		return "none"
	}
	return otherLabel
}
