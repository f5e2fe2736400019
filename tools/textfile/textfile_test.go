package textfile

import (
	"bytes"
	"strings"
	"testing"
)

func TestIsBinary(t *testing.T) {
	cases := []struct {
		name   string
		sample []byte
		want   bool
	}{
		{"empty", nil, false},
		{"ascii", []byte("hello\nworld\n"), false},
		{"utf8", []byte("héllo wörld — 日本語\n"), false},
		{"tabs crlf ansi", []byte("a\tb\r\n\x1b[31mred\x1b[0m\n"), false},
		{"nul", []byte("abc\x00def"), true},
		{"png header", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), true},
		{"utf16", []byte{0xff, 0xfe, 'h', 0, 'i', 0}, true},
		{"random high bytes", bytes.Repeat([]byte{0xc3, 0x28, 0xa0, 0xa1}, 100), true},
		{"controls", bytes.Repeat([]byte{0x01, 0x02, 'a'}, 100), true},
		{"latin1 with a few accents", []byte(strings.Repeat("caf\xe9 au lait, ", 20)), false},
		{"rune cut by the sample end", append(bytes.Repeat([]byte("a"), SniffLen-1), 0xe6, 0x97, 0xa5), false},
		{"nul beyond the sample", append(bytes.Repeat([]byte("a"), SniffLen), 0), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IsBinary(c.sample); got != c.want {
				t.Fatalf("IsBinary = %v, want %v", got, c.want)
			}
		})
	}
}

func TestSplitRoundTrip(t *testing.T) {
	for _, s := range []string{"", "\n", "a", "a\n", "a\nb", "a\r\nb\r\n", "a\r\nb\nc", "\r\n\r\n", "x\ry\n"} {
		got := Split(s)
		if got.String() != s {
			t.Errorf("Split(%q).String() = %q", s, got.String())
		}
	}
	if n := Split("a\nb\n").Len(); n != 2 {
		t.Errorf("lines of a\\nb\\n = %d, want 2", n)
	}
	if n := Split("").Len(); n != 0 {
		t.Errorf("lines of empty = %d, want 0", n)
	}
	if l := Split("x\ry\n").Lines[0]; l.Text != "x\ry" || l.End != "\n" {
		t.Errorf("a lone CR is not a line break: %+v", l)
	}
}

func TestEOL(t *testing.T) {
	cases := []struct {
		in       string
		eol      string
		uniform  bool
		detected string
	}{
		{"", "\n", false, "\n"},
		{"a", "\n", false, "\n"},
		{"a\nb\n", "\n", false, "\n"},
		{"a\r\nb\r\n", "\r\n", true, "\r\n"},
		{"a\r\nb\r\nc\n", "\r\n", false, "\r\n"},
		{"a\r\nb\nc\n", "\n", false, "\n"},
	}
	for _, c := range cases {
		tx := Split(c.in)
		if tx.EOL() != c.eol || tx.UniformCRLF() != c.uniform || DetectEOL(c.in) != c.detected {
			t.Errorf("%q: EOL %q uniform %v detect %q; want %q %v %q", c.in, tx.EOL(), tx.UniformCRLF(), DetectEOL(c.in), c.eol, c.uniform, c.detected)
		}
	}
}

func TestReplace(t *testing.T) {
	cases := []struct {
		name     string
		in       string
		from, to int
		repl     []string
		want     string
	}{
		{"middle", "a\nb\nc\n", 1, 2, []string{"B"}, "a\nB\nc\n"},
		{"grow", "a\nb\nc\n", 1, 2, []string{"x", "y"}, "a\nx\ny\nc\n"},
		{"delete middle", "a\nb\nc\n", 1, 2, nil, "a\nc\n"},
		{"last without newline kept without", "a\nb", 1, 2, []string{"B"}, "a\nB"},
		{"last with newline kept with", "a\nb\n", 1, 2, []string{"B"}, "a\nB\n"},
		{"delete last of unterminated", "a\nb", 1, 2, nil, "a"},
		{"delete all", "a\nb\n", 0, 2, nil, ""},
		{"insert top", "a\n", 0, 0, []string{"z"}, "z\na\n"},
		{"insert end of unterminated", "a\nb", 2, 2, []string{"c"}, "a\nb\nc"},
		{"insert end of terminated", "a\nb\n", 2, 2, []string{"c"}, "a\nb\nc\n"},
		{"insert into empty", "", 0, 0, []string{"x"}, "x\n"},
		{"crlf file gets crlf", "a\r\nb\r\n", 1, 1, []string{"x"}, "a\r\nx\r\nb\r\n"},
		{"mixed file keeps untouched endings", "a\r\nb\nc\r\n", 2, 3, []string{"C"}, "a\r\nb\nC\r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Split(c.in).Replace(c.from, c.to, c.repl).String()
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestContentLines(t *testing.T) {
	cases := map[string][]string{
		"":         {""},
		"x":        {"x"},
		"x\n":      {"x"},
		"x\r\ny":   {"x", "y"},
		"x\n\n":    {"x", ""},
		"\n":       {""},
		"a\nb\r\n": {"a", "b"},
	}
	for in, want := range cases {
		got := ContentLines(in)
		if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("ContentLines(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWriteNumberedAndClip(t *testing.T) {
	var b strings.Builder
	WriteNumbered(&b, 9, []string{"nine", "ten", "bad\xffutf8"})
	want := " 9\tnine\n10\tten\n11\tbad\uFFFDutf8\n"
	if b.String() != want {
		t.Fatalf("WriteNumbered = %q, want %q", b.String(), want)
	}
	b.Reset()
	WriteNumbered(&b, 1, []string{strings.Repeat("y", 3*MaxLineBytes)})
	if b.Len() != 3*MaxLineBytes+3 {
		t.Fatalf("WriteNumbered must leave clipping to its caller")
	}
	long := strings.Repeat("é", MaxLineBytes) // 2 bytes each
	got := Clip(long, MaxLineBytes)
	if !strings.Contains(got, "[line cut, 4000 bytes in all]") || !strings.HasPrefix(got, strings.Repeat("é", MaxLineBytes/2)+" ") {
		t.Fatalf("Clip cut badly: %q", got[len(got)-60:])
	}
	if Cut("aé", 2) != "a" {
		t.Fatalf("Cut split a rune: %q", Cut("aé", 2))
	}
}
