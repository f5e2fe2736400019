package gitignore

import (
	"testing"
)

type probe struct {
	path  string
	isDir bool
	want  bool
}

// TestMatch mirrors the examples of gitignore(5) and the corner cases of its
// PATTERN FORMAT section, one .gitignore at the root.
func TestMatch(t *testing.T) {
	cases := []struct {
		name    string
		content string
		probes  []probe
	}{
		{"blank lines and comments", "\n# hello.txt\n   \n", []probe{
			{"hello.txt", false, false}, {"# hello.txt", false, false},
		}},
		{"escaped hash", `\#file`, []probe{{"#file", false, true}, {"file", false, false}}},
		{"escaped bang", `\!important`, []probe{{"!important", false, true}, {"important", false, false}}},
		{"trailing spaces dropped", "foo   ", []probe{{"foo", false, true}, {"foo   ", false, false}}},
		{"escaped trailing space kept", `foo\ `, []probe{{"foo ", false, true}, {"foo", false, false}}},
		{"crlf line endings", "a.txt\r\nb.txt\r\n", []probe{{"a.txt", false, true}, {"b.txt", false, true}}},
		{"hello.* at any level", "hello.*", []probe{
			{"hello.txt", false, true}, {"a/b/hello.c", false, true}, {"hello", false, false}, {"xhello.c", false, false},
		}},
		{"foo/ matches directories only", "foo/", []probe{
			{"foo", true, true}, {"a/foo", true, true}, {"foo", false, false}, {"a/foo", false, false},
		}},
		{"doc/frotz/ is anchored", "doc/frotz/", []probe{
			{"doc/frotz", true, true}, {"a/doc/frotz", true, false}, {"doc/frotz", false, false},
		}},
		{"frotz/ at any level", "frotz/", []probe{{"frotz", true, true}, {"a/frotz", true, true}}},
		{"leading slash anchors", "/bar", []probe{{"bar", false, true}, {"bar", true, true}, {"a/bar", false, false}}},
		{"middle slash anchors", "a/bar", []probe{{"a/bar", false, true}, {"x/a/bar", false, false}}},
		{"foo/* is one level", "foo/*", []probe{
			{"foo/test.json", false, true}, {"foo/bar", true, true}, {"foo/bar/hello.c", false, false}, {"foo", true, false},
		}},
		{"star does not cross slashes", "a/*.c", []probe{{"a/x.c", false, true}, {"a/b/x.c", false, false}}},
		{"leading ** matches in all directories", "**/foo", []probe{
			{"foo", false, true}, {"a/foo", true, true}, {"a/b/foo", false, true}, {"a/foox", false, false},
		}},
		{"leading ** with path", "**/foo/bar", []probe{
			{"foo/bar", false, true}, {"x/y/foo/bar", false, true}, {"foo/x/bar", false, false},
		}},
		{"trailing ** matches everything inside", "abc/**", []probe{
			{"abc/x", false, true}, {"abc/x/y", true, true}, {"abc", true, false}, {"x/abc/y", false, false},
		}},
		{"middle ** matches zero or more directories", "a/**/b", []probe{
			{"a/b", false, true}, {"a/x/b", false, true}, {"a/x/y/b", false, true}, {"a/x/c", false, false},
		}},
		{"other ** is a plain star", "foo**bar", []probe{{"fooxbar", false, true}, {"foo/bar", false, false}}},
		{"question mark", "?.txt", []probe{{"a.txt", false, true}, {"ab.txt", false, false}, {".txt", false, false}}},
		{"range", "[a-c].txt", []probe{{"b.txt", false, true}, {"d.txt", false, false}}},
		{"negated range with bang", "[!a-c].txt", []probe{{"d.txt", false, true}, {"b.txt", false, false}}},
		{"negated range with caret", "[^a-c].txt", []probe{{"d.txt", false, true}, {"a.txt", false, false}}},
		{"bracket first in set", "[]x].txt", []probe{{"].txt", false, true}, {"x.txt", false, true}, {"y.txt", false, false}}},
		{"posix class", "[[:digit:]]*.log", []probe{{"1.log", false, true}, {"a.log", false, false}}},
		{"escaped dash in set", `[a\-z]`, []probe{{"-", false, true}, {"b", false, false}}},
		{"unclosed bracket is dropped", "[abc\nok", []probe{{"a", false, false}, {"[abc", false, false}, {"ok", false, true}}},
		{"star matches dotfiles", "*", []probe{{".env", false, true}, {"a/b", true, true}}},
		{"suffix fast path", "*.log", []probe{{".log", false, true}, {"a/x.log", false, true}, {"x.logs", false, false}}},
		{"negation re-includes", "*.c\n!keep.c", []probe{{"x.c", false, true}, {"keep.c", false, false}, {"a/keep.c", false, false}}},
		{"last match wins", "!keep.c\n*.c", []probe{{"keep.c", false, true}}},
		{"only foo/bar", "/*\n!/foo\n/foo/*\n!/foo/bar", []probe{
			{"x", false, true}, {"foo", true, false}, {"foo/x", false, true}, {"foo/bar", true, false},
		}},
		{"slash alone is nothing", "/\n!", []probe{{"a", false, false}}},
		{"case sensitive", "README", []probe{{"README", false, true}, {"readme", false, false}}},
		{"regex metacharacters are literal", "a+b(c).txt", []probe{{"a+b(c).txt", false, true}, {"aab(c).txt", false, false}}},
		{"wildcards with metacharacters", "*.(x)", []probe{{"a.(x)", false, true}, {"a.x", false, false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := (*Matcher)(nil).Add("", []byte(c.content))
			for _, p := range c.probes {
				if got := m.Match(p.path, p.isDir); got != p.want {
					t.Errorf("Match(%q, dir=%v) = %v, want %v", p.path, p.isDir, got, p.want)
				}
			}
		})
	}
}

// TestNestedFiles checks that a nested .gitignore applies only under its
// directory, anchors there, and overrides the files above it.
func TestNestedFiles(t *testing.T) {
	m := (*Matcher)(nil).
		Add("", []byte("*.log\n/top-only\nbuild/\n")).
		Add("sub", []byte("*.tmp\n!keep.log\n/anchored\nnested/*.txt\n")).
		Add("sub/deeper", []byte("!*.tmp\n"))
	cases := []probe{
		{"x.log", false, true},
		{"sub/x.log", false, true},
		{"sub/keep.log", false, false}, // sub re-includes it
		{"keep.log", false, true},      // sub's rule does not reach up
		{"x.tmp", false, false},
		{"sub/x.tmp", false, true},
		{"sub/a/x.tmp", false, true},
		{"sub/deeper/x.tmp", false, false},
		{"sub/anchored", false, true},
		{"sub/a/anchored", false, false},
		{"anchored", false, false},
		{"top-only", false, true},
		{"sub/top-only", false, false},
		{"sub/nested/a.txt", false, true},
		{"sub/x/nested/a.txt", false, false},
		{"subx/x.tmp", false, false}, // "sub" is a directory, not a prefix
	}
	for _, p := range cases {
		if got := m.Match(p.path, p.isDir); got != p.want {
			t.Errorf("Match(%q) = %v, want %v", p.path, got, p.want)
		}
	}
}

func TestIgnoredLooksAtParents(t *testing.T) {
	m := (*Matcher)(nil).Add("", []byte("build/\n!build/keep.txt\nlogs\n"))
	cases := []probe{
		{"build/keep.txt", false, true}, // a file in an excluded directory stays excluded
		{"build/a/b.go", false, true},
		{"logs/x", false, true},
		{"src/build", false, false}, // a file named build
		{"src/main.go", false, false},
	}
	for _, p := range cases {
		if got := m.Ignored(p.path, p.isDir); got != p.want {
			t.Errorf("Ignored(%q) = %v, want %v", p.path, got, p.want)
		}
	}
	// Match looks at the path alone, so it sees the negation; only
	// Ignored knows about the parent.
	if m.Match("build/keep.txt", false) {
		t.Error("Match should honour the negation for the path alone")
	}
}

func TestAddLeavesTheOriginalAlone(t *testing.T) {
	root := (*Matcher)(nil).Add("", []byte("*.a\n"))
	left := root.Add("left", []byte("*.b\n"))
	right := root.Add("right", []byte("!*.a\n"))
	if !left.Match("left/x.a", false) || !left.Match("left/x.b", false) {
		t.Error("left lost rules")
	}
	if right.Match("right/x.a", false) || !root.Match("right/x.a", false) {
		t.Error("right's negation leaked or did not apply")
	}
	if root.Match("left/x.b", false) {
		t.Error("Add changed the original matcher")
	}
}
