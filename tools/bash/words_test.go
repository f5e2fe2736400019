package bash

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

func parseWord(t *testing.T, src string) *syntax.Word {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader("x "+src), "")
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	return f.Stmts[0].Cmd.(*syntax.CallExpr).Args[1]
}

func TestEvalWord(t *testing.T) {
	cases := []struct {
		src      string
		text     string
		literal  bool
		glob     bool
		flagSafe bool
	}{
		{`rm`, "rm", true, false, true},
		{`'rm'`, "rm", true, false, true},
		{`"r""m"`, "rm", true, false, true},
		{`r\m`, "rm", true, false, true},
		{`"r\m"`, `r\m`, true, false, true},
		{`"a\"b\$c"`, `a"b$c`, true, false, true},
		{`$'rm'`, "rm", true, false, true},
		{`$'\x72m'`, "", false, false, false},
		{`-rf`, "-rf", true, false, false},
		{`'-rf'`, "-rf", true, false, false},
		{`$x`, "", false, false, false},
		{`"$x"`, "", false, false, false},
		{`./"$x"`, "./", false, false, true},
		{`./$x`, "./", false, false, false},
		{`x$(y)`, "x", false, false, false},
		{`*`, "*", true, true, false},
		{`*.go`, "*.go", true, true, false},
		{`./*`, "./*", true, true, true},
		{`'*'`, "*", true, false, true},
		{`\*`, "*", true, false, true},
		{`[`, "[", true, false, true},
		{`a[bc]`, "a[bc]", true, true, true},
		{`{a,b}`, "{a,b}", false, false, false},
		{`{}`, "{}", true, false, true},
		{`<(ls)`, "/dev/fd/", false, false, true},
	}
	for _, tc := range cases {
		w := evalWord(parseWord(t, tc.src))
		if w.literal != tc.literal || w.glob != tc.glob || w.flagSafe != tc.flagSafe || (w.literal && w.text != tc.text) || (!w.literal && w.text != tc.text) {
			t.Errorf("%s: got text=%q literal=%v glob=%v flagSafe=%v, want %q %v %v %v",
				tc.src, w.text, w.literal, w.glob, w.flagSafe, tc.text, tc.literal, tc.glob, tc.flagSafe)
		}
	}
}

func TestHeredocUnescapingKeepsBackslashBeforeQuote(t *testing.T) {
	// In an unquoted here-document \" keeps its backslash; treating it as
	// inside double quotes would hide the ; below from the policy.
	if got := unescapeHeredoc(`echo \"; shred x #\" \$HOME`); got != `echo \"; shred x #\" $HOME` {
		t.Fatalf("got %q", got)
	}
	err := testPolicy(t, Config{}).Check("sh <<EOF\necho \\\"; shred x #\\\"\nEOF")
	if err == nil || !strings.Contains(err.Error(), "shred") {
		t.Fatalf("shred hidden behind \\\" in a here-document was not refused: %v", err)
	}
}

func TestShellQuoteRoundTrips(t *testing.T) {
	for _, s := range []string{"plain", "with space", "it's", "", "$(x)", "-rf"} {
		w := evalWord(parseWord(t, shellQuote(s)))
		if !w.exact() || w.text != s {
			t.Errorf("shellQuote(%q) = %s reads back as %q (exact=%v)", s, shellQuote(s), w.text, w.exact())
		}
	}
}
