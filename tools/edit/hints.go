package edit

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/tools/textfile"
)

// Bounds on the work a hint may cost: it only runs on a failed call.
const (
	hintMaxLines    = 20_000
	hintLineBytes   = 200
	hintCandidates  = 3
	hintMinSimilar  = 0.5
	hintExactMarker = 2.0 // a whitespace-insensitive match outranks any similarity
)

// closestHint helps a model whose text did not match. Most misses are
// whitespace (tabs against spaces, a changed indentation) or a line edited
// since the model last read the file, so it shows the lines that match the
// first line of the text once whitespace is ignored, or else the lines most
// like it. For a regex, needle is its literal parts, and only similarity
// counts.
func closestHint(content, needle string, literal bool) string {
	first := ""
	for _, l := range strings.Split(needle, "\n") {
		if strings.TrimSpace(l) != "" {
			first = l
			break
		}
	}
	key := squash(first)
	if key == "" {
		return ""
	}
	needleGrams := bigrams(strings.ToLower(key))
	type candidate struct {
		line  int
		score float64
		text  string
	}
	var cands []candidate
	i := -1
	for l := range strings.Lines(content) {
		i++
		if i == hintMaxLines {
			break
		}
		text := strings.TrimRight(l, "\r\n")
		s := squash(textfile.Cut(text, hintLineBytes*4))
		if s == "" {
			continue
		}
		score := 0.0
		if literal && strings.Contains(s, key) {
			score = hintExactMarker
		} else {
			score = similarity(needleGrams, strings.ToLower(textfile.Cut(s, hintLineBytes)))
		}
		if score >= hintMinSimilar {
			cands = append(cands, candidate{line: i + 1, score: score, text: text})
		}
	}
	if len(cands) == 0 {
		return "; no line resembles it. Read the file again to see its current content"
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.line - b.line
	})
	cands = cands[:min(len(cands), hintCandidates)]
	slices.SortFunc(cands, func(a, b candidate) int { return a.line - b.line })
	var b strings.Builder
	if slices.ContainsFunc(cands, func(c candidate) bool { return c.score == hintExactMarker }) {
		b.WriteString("; it matches if whitespace is ignored, so check indentation (tabs or spaces) and line breaks. Lines like it:\n")
	} else {
		b.WriteString(". Closest lines:\n")
	}
	for _, c := range cands {
		fmt.Fprintf(&b, "%d\t%s\n", c.line, textfile.Clip(c.text, hintLineBytes))
	}
	b.WriteString("Copy the text exactly as the file has it (read it again if it may have changed)")
	return b.String()
}

// squash collapses every run of whitespace to one space and trims the ends.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// bigrams is the set of byte pairs of s.
func bigrams(s string) map[[2]byte]bool {
	set := make(map[[2]byte]bool, len(s))
	for i := 0; i+1 < len(s); i++ {
		set[[2]byte{s[i], s[i+1]}] = true
	}
	return set
}

// similarity is a Dice coefficient over byte pairs: the share of s's pairs
// that the needle also has, weighed against both lengths. It costs no
// allocation per line.
func similarity(needle map[[2]byte]bool, s string) float64 {
	if len(s) < 2 || len(needle) == 0 {
		return 0
	}
	hits := 0
	for i := 0; i+1 < len(s); i++ {
		if needle[[2]byte{s[i], s[i+1]}] {
			hits++
		}
	}
	return 2 * float64(hits) / float64(len(s)-1+len(needle))
}

// literalPart extracts the literal text of a regular expression, joined by
// spaces, so a failed regex search can be hinted at like a literal one.
func literalPart(expr string) string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return ""
	}
	var parts []string
	var walk func(*syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		if r.Op == syntax.OpLiteral {
			parts = append(parts, string(r.Rune))
		}
		for _, s := range r.Sub {
			walk(s)
		}
	}
	walk(re.Simplify())
	return strings.Join(parts, " ")
}
