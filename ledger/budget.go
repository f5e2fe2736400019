package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/tools/limits"
)

// Budgets bound what each user and each chain may spend in a UTC day, in
// tokens (input plus output) or cost. They are the operator's (serve
// --budgets): keyed by user id or chain id, with "*" for every other one.
// An entry for a name replaces "*" for it.
//
// A run is checked before each LLM call (each agent turn, each ai/intent
// classification) against what its user and its chain have spent today,
// across the fleet when the ledger is in Redis: a run that finds a budget
// spent ends with RUN_ERROR code limit_exceeded naming it. The call that
// crosses a budget is not stopped (its cost is known only once it has
// answered), so a budget is passed by at most one LLM call per run in
// flight of that user or chain.
type Budgets struct {
	Users  map[string]*Budget `json:"users,omitempty"`
	Chains map[string]*Budget `json:"chains,omitempty"`
}

// Budget is one entry: a day's tokens, or its cost, or both.
type Budget struct {
	TokensPerDay int64  `json:"tokensPerDay,omitempty"`
	CostPerDay   string `json:"costPerDay,omitempty"`

	cost Nanos
}

// The limits a budget reports (limits.Exceeded.Limit, RUN_ERROR's
// errorLimit, ruleagent_limit_hits_total{limit}).
const (
	LimitUserTokens  = "users.tokensPerDay"
	LimitUserCost    = "users.costPerDay"
	LimitChainTokens = "chains.tokensPerDay"
	LimitChainCost   = "chains.costPerDay"
)

// LoadBudgets reads budgets given as a JSON object or as the path of a
// JSON file (serve --budgets); an empty arg is none. A mistake is an error
// naming its field.
func LoadBudgets(arg string) (*Budgets, error) {
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return nil, nil
	}
	raw, from := []byte(arg), "budgets"
	if !strings.HasPrefix(arg, "{") {
		b, err := os.ReadFile(arg)
		if err != nil {
			return nil, err
		}
		raw, from = b, arg
	}
	b, err := ParseBudgets(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return b, nil
}

// ParseBudgets reads budgets from JSON.
func ParseBudgets(raw []byte) (*Budgets, error) {
	var b Budgets
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("want {\"users\": {NAME|\"*\": {\"tokensPerDay\", \"costPerDay\"}}, \"chains\": {...}}: %w", err)
	}
	for _, part := range []struct {
		name string
		m    map[string]*Budget
	}{{"users", b.Users}, {"chains", b.Chains}} {
		for _, k := range slices.Sorted(maps.Keys(part.m)) {
			e := part.m[k]
			path := part.name + "." + k
			switch {
			case k == "":
				return nil, fmt.Errorf("%s: an empty name (use \"*\" for everyone)", part.name)
			case e == nil || e.TokensPerDay == 0 && e.CostPerDay == "":
				return nil, fmt.Errorf("%s: set tokensPerDay or costPerDay", path)
			case e.TokensPerDay < 0:
				return nil, fmt.Errorf("%s.tokensPerDay: must be positive", path)
			}
			if e.CostPerDay != "" {
				c, err := ParseAmount(e.CostPerDay)
				if err != nil {
					return nil, fmt.Errorf("%s.costPerDay: %w", path, err)
				}
				if c == 0 {
					return nil, fmt.Errorf("%s.costPerDay: must be more than 0", path)
				}
				e.cost = c
			}
		}
	}
	if len(b.Users) == 0 && len(b.Chains) == 0 {
		return nil, errors.New("no budgets: give users or chains, or leave --budgets out")
	}
	return &b, nil
}

// needPrices refuses cost budgets without a price table.
func (b *Budgets) needPrices(p *Prices) error {
	if b == nil || p != nil {
		return nil
	}
	for _, m := range []map[string]*Budget{b.Users, b.Chains} {
		for k, e := range m {
			if e.CostPerDay != "" {
				return fmt.Errorf("budgets: %s costPerDay needs a price table (--prices)", k)
			}
		}
	}
	return nil
}

// lookup is the entry for name: its own, else "*"; and the key it was
// found under.
func lookup(m map[string]*Budget, name string) (*Budget, string) {
	if name == "" {
		return nil, ""
	}
	if e, ok := m[name]; ok {
		return e, name
	}
	if e, ok := m["*"]; ok {
		return e, "*"
	}
	return nil, ""
}

// Admit checks the daily budgets of a user and a chain against what they
// have spent today (written and still queued): nil, a *limits.Exceeded
// naming the budget spent, or the store's error.
func (l *Ledger) Admit(ctx context.Context, user, chain string) error {
	if l == nil || l.budgets == nil {
		return nil
	}
	ub, ukey := lookup(l.budgets.Users, user)
	cb, ckey := lookup(l.budgets.Chains, chain)
	if ub == nil && cb == nil {
		return nil
	}
	day := dayOf(l.now())
	keys := []DayKey{{Day: day, Dim: DimUser, ID: user}, {Day: day, Dim: DimChain, ID: chain}}
	spent, err := l.un.count(keys, func() ([]Totals, uint64, error) { return l.store.DayTotals(ctx, l.id, keys) })
	if err != nil {
		return err
	}
	if ub != nil {
		if err := l.over(ub, spent[0], "user", user, "users", ukey, LimitUserTokens, LimitUserCost); err != nil {
			return err
		}
	}
	if cb != nil {
		return l.over(cb, spent[1], "chain", chain, "chains", ckey, LimitChainTokens, LimitChainCost)
	}
	return nil
}

// over reports a budget spent.
func (l *Ledger) over(b *Budget, spent Totals, what, name, section, key, tokensLimit, costLimit string) error {
	if b.TokensPerDay > 0 && spent.TotalTokens >= b.TokensPerDay {
		return limits.Hit(tokensLimit, b.TokensPerDay, spent.TotalTokens,
			"%s %q has used %d tokens today (UTC), reaching its daily budget of %d (budgets %s[%q].tokensPerDay)",
			what, name, spent.TotalTokens, b.TokensPerDay, section, key)
	}
	if b.cost > 0 && spent.Cost >= b.cost {
		cur := l.prices.Currency
		return limits.Hit(costLimit, int64(b.cost), int64(spent.Cost),
			"%s %q has spent %s %s today (UTC), reaching its daily budget of %s %s (budgets %s[%q].costPerDay)",
			what, name, spent.Cost, cur, b.cost, cur, section, key)
	}
	return nil
}
