package ledger

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/aspects"
)

func TestParseAmountAndString(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Nanos
		text string
	}{
		{"0.15", 150_000_000, "0.15"},
		{"3", 3_000_000_000, "3"},
		{"2.50", 2_500_000_000, "2.5"},
		{".5", 500_000_000, "0.5"},
		{"0.000000001", 1, "0.000000001"},
		{"0", 0, "0"},
		{"1234.000006150", 1234_000_006_150, "1234.00000615"},
	} {
		got, err := ParseAmount(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseAmount(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
		if got.String() != c.text {
			t.Errorf("%d.String() = %q, want %q", got, got.String(), c.text)
		}
	}
	for _, bad := range []string{"", "-1", "1e3", "0.0000000001", "abc", "1.2.3", "+1", "1_000"} {
		if _, err := ParseAmount(bad); err == nil {
			t.Errorf("ParseAmount(%q) accepted", bad)
		}
	}
}

func TestPriceCostIsExact(t *testing.T) {
	p := Price{Input: mustAmount(t, "0.15"), CachedInput: mustAmount(t, "0.075"), Output: mustAmount(t, "0.60"), Reasoning: mustAmount(t, "0.60")}
	// 41 prompt tokens (10 cached), 24 completion tokens:
	// 31 × 0.15 + 10 × 0.075 + 24 × 0.60 = 4.65 + 0.75 + 14.4 = 19.8 µ$ = 19,800 nanos.
	if got := p.Cost(aspects.Usage{PromptTokens: 41, CachedTokens: 10, CompletionTokens: 24}); got != 19_800 {
		t.Fatalf("cost = %d nanos, want 19800", got)
	}
	// A million such calls add up to exactly a million times one: integer
	// nanos, where float64 dollars would have drifted.
	var total Nanos
	for range 1_000_000 {
		total += p.Cost(aspects.Usage{PromptTokens: 41, CachedTokens: 10, CompletionTokens: 24})
	}
	if total != 19_800_000_000 || total.String() != "19.8" {
		t.Fatalf("a million calls = %s, want exactly 19.8", total)
	}
	// Reasoning tokens are part of the completion, priced at their own price.
	r := Price{Input: 1_000_000_000, Output: 4_000_000_000, Reasoning: 8_000_000_000}
	if got := r.Cost(aspects.Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000, ReasoningTokens: 500_000}); got != 1_000_000_000+2_000_000_000+4_000_000_000 {
		t.Fatalf("reasoning cost = %d", got)
	}
	// Counts far past an int64 product do not overflow.
	big := Price{Input: 1_000_000_000_000}
	if got := big.Cost(aspects.Usage{PromptTokens: 50_000_000}); got != 50_000_000_000_000 {
		t.Fatalf("large cost = %d", got)
	}
}

func mustAmount(t *testing.T, s string) Nanos {
	t.Helper()
	n, err := ParseAmount(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPricesMatchExactThenLongestGlob(t *testing.T) {
	p, err := ParsePrices([]byte(`
currency: EUR
models:
  - {model: "gpt-4o*", input: 2.5, output: 10}
  - {model: "gpt-4o-mini*", input: 0.15, output: 0.6}
  - {model: "gpt-4o-mini", input: 0.2, output: 0.8}
  - {model: "gpt-4o-mini*", provider: eu.example.com, input: 0.3, output: 0.9}
  - {model: "meta-llama/*", input: 0.1, output: 0.1}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ provider, model, want string }{
		{"api.openai.com", "gpt-4o-mini", "gpt-4o-mini"},
		{"api.openai.com", "GPT-4o-Mini", "gpt-4o-mini"},
		{"api.openai.com", "gpt-4o-mini-2024-07-18", "gpt-4o-mini*"},
		{"eu.example.com", "gpt-4o-mini-2024-07-18", "gpt-4o-mini*@eu.example.com"},
		{"api.openai.com", "gpt-4o-2024-08-06", "gpt-4o*"},
		{"x", "meta-llama/Llama-3-70b", "meta-llama/*"},
		{"x", "claude-3", ""},
	} {
		e := p.Lookup(c.provider, c.model)
		got := ""
		if e != nil {
			got = e.Model
			if e.Provider != "" {
				got += "@" + e.Provider
			}
		}
		if got != c.want {
			t.Errorf("Lookup(%q, %q) = %q, want %q", c.provider, c.model, got, c.want)
		}
	}
	if p.Currency != "EUR" {
		t.Errorf("currency %q", p.Currency)
	}
}

func TestParsePricesRefusesMistakes(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"models": [{"model": "a", "input": 1}]}`, "models[0]: input and output prices are required"},
		{`{"models": [{"model": "a", "input": 1, "output": "x"}]}`, "models[0].output"},
		{`{"models": [{"model": "a", "input": 1, "output": 1, "cached": 1}]}`, "models[0].cached: unknown field"},
		{`{"models": [{"input": 1, "output": 1}]}`, "models[0].model: missing"},
		{`{"models": [{"model": "a", "input": 1, "output": 1}, {"model": "A", "input": 1, "output": 2}]}`, "priced twice"},
		{`{"price": []}`, "price: unknown field"},
		{`{"currency": "USD"}`, "models: missing"},
		{`{"models": [{"model": "a", "input": -1, "output": 1}]}`, "not negative"},
		{"models:\n  - {model: a, input: 1, output: 1}\n  - {model: b, input: 1, output: 1}\n  - model: c\n    input: 1\n    output: 1,5\n",
			`models[2].output: "1,5" is not a decimal amount`},
	} {
		_, err := ParsePrices([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.doc, err, c.want)
		}
	}
}

// TestShippedExamplePrices loads the example price table the README
// documents, and prices a call with it.
func TestShippedExamplePrices(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	p, err := LoadPrices(filepath.Join(filepath.Dir(file), "..", "docs", "prices.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Currency != "USD" || p.AsOf == "" || !strings.Contains(p.Note, "example") {
		t.Fatalf("the example must say its currency, date and that it is an example: %+v", p)
	}
	e := p.Lookup("api.openai.com", "gpt-4o-mini-2024-07-18")
	if e == nil || e.Model != "gpt-4o-mini*" {
		t.Fatalf("gpt-4o-mini-2024-07-18 priced by %+v", e)
	}
	if got := e.Cost(aspects.Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000}).String(); got != "0.75" {
		t.Fatalf("a million in and out on gpt-4o-mini = %s, want 0.75", got)
	}
	if e := p.Lookup("api.openai.com", "o3-mini-2025-01-31"); e == nil || e.Model != "o3-mini*" {
		t.Fatalf("o3-mini priced by %+v", e)
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		p, n string
		ok   bool
	}{
		{"*", "", true}, {"a*", "abc", true}, {"a*c", "abbbc", true}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"*/x", "a/b/x", true}, {"gpt-4o*", "gpt-4", false}, {"a*b*c", "axxbyyc", true}, {"a*b*c", "axxbyy", false},
	} {
		if globMatch(c.p, c.n) != c.ok {
			t.Errorf("globMatch(%q, %q) != %v", c.p, c.n, c.ok)
		}
	}
}
