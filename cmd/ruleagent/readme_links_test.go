package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// Every in-page link of the README (](#anchor)) names a heading, by the
// anchor GitHub gives it (lower case, punctuation dropped, spaces as
// hyphens, a repeated heading numbered -1, -2...), so the contents list
// and the cross-references lead somewhere.
func TestREADMEInPageLinksResolve(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := headingAnchor(title)
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	links := regexp.MustCompile(`\]\(#([^)\s]+)\)`).FindAllStringSubmatch(string(data), -1)
	if len(links) < 20 {
		t.Fatalf("only %d in-page links found", len(links))
	}
	for _, m := range links {
		if !anchors[m[1]] {
			t.Errorf("README links to #%s, which no heading gives", m[1])
		}
	}
}

func headingAnchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
