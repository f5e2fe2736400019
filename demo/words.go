package demo

import (
	"regexp"
	"strings"
	"unicode"
)

// The demo matches a request to tools and intents by shared words: no
// model, only a stemming-free comparison that deterministic tests can
// predict.

// stopwords carry no meaning for matching.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`the and for you your yours our ours his her hers its they them their this that these those
		with without from into onto about over under are was were been being have has had does did doing will would
		shall should can could may might must not but all any some each every one two its it's what which who whom whose
		how why when then than there here also only just very more most much many few such own same please thanks thank
		hello dear get got let lets make made give given use used using tell tells told want wants need needs like
		out off now yes way ask asks asked said say says via per etc able`) {
		stopwords[w] = true
	}
}

// words are the meaningful words of s, lower-cased, in order, without
// repeats: letters only (an identifier such as get_order_status or
// orderId gives its parts), at least three letters, no stopwords.
func words(s string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(w string) {
		w = strings.ToLower(w)
		if len([]rune(w)) < 3 || stopwords[w] || seen[w] {
			return
		}
		seen[w] = true
		out = append(out, w)
	}
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			add(string(cur))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range s {
		switch {
		case !unicode.IsLetter(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			// camelCase: orderId is order, id.
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return out
}

// same reports whether two words are one for matching: equal, or sharing
// a prefix of five letters (or of the whole shorter word, when it has four),
// so that review matches reviews and summarise matches summarizes.
func same(a, b string) bool {
	if a == b {
		return true
	}
	ra, rb := []rune(a), []rune(b)
	short := min(len(ra), len(rb))
	if short < 4 {
		return false
	}
	need := min(short, 5)
	for i := range need {
		if ra[i] != rb[i] {
			return false
		}
	}
	return true
}

// overlap lists the words of asked that match a word of offered.
func overlap(asked, offered []string) []string {
	var out []string
	for _, a := range asked {
		for _, o := range offered {
			if same(a, o) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// idToken finds identifier-like tokens: letters or digits joined by
// '-', '_' or '.' (A-1001, support-agent, v1.2), or a word holding a
// digit (INV42). ids keeps those that hold a digit or a '-': a snake_case
// word is more often a name (of a tool, say) than an id.
var idToken = regexp.MustCompile(`[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)+|[A-Za-z]*[0-9][A-Za-z0-9]*`)

// ids are the identifier-like tokens of s, in order.
func ids(s string) []string {
	var out []string
	for _, m := range idToken.FindAllString(s, -1) {
		if strings.IndexFunc(m, unicode.IsLetter) < 0 && !strings.ContainsAny(m, "-_") {
			continue // a plain number is not an id
		}
		if !strings.ContainsAny(m, "-0123456789") {
			continue
		}
		out = append(out, m)
	}
	return out
}

var (
	number = regexp.MustCompile(`-?\b\d+(?:\.\d+)?\b`)
	quoted = regexp.MustCompile("\"([^\"]+)\"|“([^”]+)”|'([^']{2,})'|`([^`]+)`")
)

// quote is the first quoted text of s, if any.
func quote(s string) (string, bool) {
	m := quoted.FindStringSubmatch(s)
	for _, g := range m[min(1, len(m)):] {
		if g != "" {
			return g, true
		}
	}
	return "", false
}

// clip shortens s to about n runes on a word boundary, adding "…".
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := string(r[:n])
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,.;:") + "…"
}
