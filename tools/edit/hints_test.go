package edit

import (
	"strings"
	"testing"
)

func TestClosestHint(t *testing.T) {
	content := "alpha beta\n\tif err != nil {\n\t\treturn err\n\t}\ngamma\n"
	cases := []struct {
		name    string
		needle  string
		literal bool
		want    []string
		not     []string
	}{
		{"whitespace differs", "    if err != nil {\n        return err", true, []string{"whitespace is ignored", "2\t\tif err != nil {"}, []string{"gamma"}},
		{"similar line", "if erro != nul {", true, []string{"Closest lines:", "2\t\tif err != nil {"}, []string{"whitespace"}},
		{"nothing like it", "zzzzqqqq", true, []string{"no line resembles it"}, nil},
		{"regex literals are only compared", literalPart(`if\s+err\s*!=\s*nil`), false, []string{"Closest lines:", "if err != nil"}, []string{"whitespace"}},
		{"blank needle", "\n  \n", true, nil, []string{"Closest"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := closestHint(content, c.needle, c.literal)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Fatalf("hint %q lacks %q", got, w)
				}
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Fatalf("hint %q has %q", got, n)
				}
			}
		})
	}
}

func TestClosestHintIsBounded(t *testing.T) {
	// The match sits past the lines a hint may scan: it must not be found.
	content := strings.Repeat("unrelated filler text\n", hintMaxLines) + "needle in the haystack\n"
	if got := closestHint(content, "needle in the haystack", true); strings.Contains(got, "needle") {
		t.Fatalf("the hint scanned past %d lines: %q", hintMaxLines, got)
	}
}

func TestLiteralPart(t *testing.T) {
	for expr, want := range map[string]string{
		`foo\(\d+\)bar`: "foo( )bar",
		`^abc$`:         "abc",
		`(`:             "",
	} {
		if got := literalPart(expr); got != want {
			t.Errorf("literalPart(%q) = %q, want %q", expr, got, want)
		}
	}
}
