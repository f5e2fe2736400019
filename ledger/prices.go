package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/ruleagent/ruleagent/aspects"
)

// Prices is a price table: what each kind of token of a model costs, per
// million tokens, in one currency. The operator writes it (serve --prices
// FILE, YAML or JSON); see README, "Usage and cost".
//
// A call's model is matched without case: an entry naming it exactly wins,
// else the matching glob (* any characters, ? one) with the longest
// pattern; an entry with a provider (the endpoint's host) applies only to
// calls to it, and wins over one without at equal length. A model no entry
// matches is unpriced: its tokens are counted, its cost is not.
type Prices struct {
	Currency string
	// AsOf and Note are the file's own words about its prices (when they
	// were read off the providers' lists, that they are examples).
	AsOf, Note string
	Entries    []Price

	exact map[string][]*Price
	globs []*Price
	// memo remembers each model's match: provider and model names come
	// from a few endpoints, and a lookup is then one map read.
	memo   sync.Map // memoKey -> *Price (nil: unpriced)
	memoed int64
	memoMu sync.Mutex
}

// Price is one entry of the table. The amounts are per million tokens.
type Price struct {
	// Model is the model's name, or a glob over names.
	Model string
	// Provider, when set, limits the entry to calls to that host.
	Provider string
	// Input prices the prompt tokens that were not cached; CachedInput
	// those that were (Input when not given); Output the completion
	// tokens; Reasoning the reasoning part of them (Output when not given).
	Input, CachedInput, Output, Reasoning Nanos

	lower string
	glob  bool
}

type memoKey struct{ provider, model string }

// maxMemo bounds the remembered matches: past it, lookups are computed.
const maxMemo = 4096

// LoadPrices reads a price table file (YAML, or JSON, which YAML reads).
func LoadPrices(path string) (*Prices, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := ParsePrices(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ParsePrices reads a price table. Every mistake is an error naming its
// place: an unknown field, an amount that is not a decimal number, an
// entry without input or output price, two entries for the same model
// and provider.
func ParsePrices(b []byte) (*Prices, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(b)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("price table: want an object with currency and models")
	}
	p := &Prices{Currency: "USD"}
	var models *yaml.Node
	err := eachField(doc.Content[0], "", func(key string, v *yaml.Node) error {
		switch key {
		case "currency":
			p.Currency = strings.TrimSpace(v.Value)
			if p.Currency == "" || v.Kind != yaml.ScalarNode {
				return errors.New("currency: want a currency code such as USD")
			}
		case "asOf":
			p.AsOf = v.Value
		case "note":
			p.Note = v.Value
		case "models":
			if v.Kind != yaml.SequenceNode {
				return errors.New("models: want a list of entries")
			}
			models = v
		default:
			return fmt.Errorf("%s: unknown field (want currency, asOf, note, models)", key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if models == nil {
		return nil, errors.New("models: missing: list the models and their prices")
	}
	for i, n := range models.Content {
		e, err := parsePrice(n, fmt.Sprintf("models[%d]", i))
		if err != nil {
			return nil, err
		}
		p.Entries = append(p.Entries, e)
	}
	return p, p.index()
}

func parsePrice(n *yaml.Node, path string) (Price, error) {
	var e Price
	if n.Kind != yaml.MappingNode {
		return e, fmt.Errorf("%s: want an object {model, input, output, ...}", path)
	}
	seen := map[string]bool{}
	err := eachField(n, path, func(key string, v *yaml.Node) error {
		seen[key] = true
		var dst *Nanos
		switch key {
		case "model":
			e.Model = strings.TrimSpace(v.Value)
			return nil
		case "provider":
			e.Provider = strings.ToLower(strings.TrimSpace(v.Value))
			return nil
		case "input":
			dst = &e.Input
		case "cachedInput":
			dst = &e.CachedInput
		case "output":
			dst = &e.Output
		case "reasoning":
			dst = &e.Reasoning
		default:
			return fmt.Errorf("%s.%s: unknown field (want model, provider, input, cachedInput, output, reasoning)", path, key)
		}
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s.%s: want a price per million tokens, such as 0.15", path, key)
		}
		amt, err := ParseAmount(v.Value)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", path, key, err)
		}
		*dst = amt
		return nil
	})
	switch {
	case err != nil:
		return e, err
	case e.Model == "":
		return e, fmt.Errorf("%s.model: missing: the model's name, or a glob such as gpt-4o-mini*", path)
	case !seen["input"] || !seen["output"]:
		return e, fmt.Errorf("%s: input and output prices are required (0 for free)", path)
	}
	if !seen["cachedInput"] {
		e.CachedInput = e.Input
	}
	if !seen["reasoning"] {
		e.Reasoning = e.Output
	}
	return e, nil
}

// eachField calls fn for each key of a mapping node, in order.
func eachField(m *yaml.Node, path string, fn func(key string, v *yaml.Node) error) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s: keys are names", path)
		}
		if err := fn(k.Value, m.Content[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// index builds the lookup tables, refusing duplicates.
func (p *Prices) index() error {
	p.exact = map[string][]*Price{}
	seen := map[memoKey]int{}
	for i := range p.Entries {
		e := &p.Entries[i]
		e.lower = strings.ToLower(e.Model)
		e.glob = strings.ContainsAny(e.lower, "*?")
		k := memoKey{e.Provider, e.lower}
		if j, dup := seen[k]; dup {
			return fmt.Errorf("models[%d]: %q is priced twice (models[%d])", i, e.Model, j)
		}
		seen[k] = i
		if e.glob {
			p.globs = append(p.globs, e)
		} else {
			p.exact[e.lower] = append(p.exact[e.lower], e)
		}
	}
	return nil
}

// Lookup returns the entry that prices model at provider, or nil.
func (p *Prices) Lookup(provider, model string) *Price {
	if p == nil {
		return nil
	}
	k := memoKey{provider, model}
	if v, ok := p.memo.Load(k); ok {
		return v.(*Price)
	}
	e := p.match(strings.ToLower(provider), strings.ToLower(model))
	p.memoMu.Lock()
	if p.memoed < maxMemo {
		p.memoed++
		p.memo.Store(k, e)
	}
	p.memoMu.Unlock()
	return e
}

func (p *Prices) match(provider, model string) *Price {
	var best *Price
	for _, e := range p.exact[model] {
		if e.Provider == provider {
			return e
		}
		if e.Provider == "" {
			best = e
		}
	}
	if best != nil {
		return best
	}
	for _, e := range p.globs {
		if e.Provider != "" && e.Provider != provider || !globMatch(e.lower, model) {
			continue
		}
		if best == nil || len(e.lower) > len(best.lower) || len(e.lower) == len(best.lower) && best.Provider == "" && e.Provider != "" {
			best = e
		}
	}
	return best
}

// globMatch matches name against pattern, where * is any run of
// characters (slashes included: model names hold them) and ? one.
func globMatch(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// Cost is what u costs at e's prices. Cached tokens are part of the
// prompt tokens and reasoning tokens part of the completion tokens (as
// OpenAI and AG-UI count them): each is priced once, at its own price.
func (e *Price) Cost(u aspects.Usage) Nanos {
	cached := min(max(u.CachedTokens, 0), max(u.PromptTokens, 0))
	reasoning := min(max(u.ReasoningTokens, 0), max(u.CompletionTokens, 0))
	var w wide
	w.add(u.PromptTokens-cached, e.Input)
	w.add(cached, e.CachedInput)
	w.add(u.CompletionTokens-reasoning, e.Output)
	w.add(reasoning, e.Reasoning)
	return w.nanos()
}
