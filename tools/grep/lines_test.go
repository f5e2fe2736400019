package grep

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// naive is the reference: split into lines and test each one.
func naive(re *regexp.Regexp, data string) []string {
	var out []string
	lines := strings.Split(data, "\n")
	if strings.HasSuffix(data, "\n") {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		if re.MatchString(l) {
			out = append(out, fmt.Sprintf("%d:%s", i+1, l))
		}
	}
	return out
}

// randomText builds lines of words, some long enough to cross the scanner's
// chunk boundaries and to force its buffer to grow, some ending in CRLF.
func randomText(r *rand.Rand) string {
	words := []string{"alpha", "beta", "gamma", "func", "Hello", "hello", "x1", "", " ", "\t", "end"}
	var b strings.Builder
	lines := r.IntN(1500)
	for range lines {
		n := r.IntN(12)
		if r.IntN(300) == 0 {
			n = 14000 + r.IntN(4000) // a line longer than the 64 KiB buffer
		}
		for range n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		if r.IntN(10) == 0 {
			b.WriteByte('\r')
		}
		b.WriteByte('\n')
	}
	if r.IntN(2) == 0 {
		b.WriteString("hello without newline")
	}
	return b.String()
}

func TestScannerAgreesWithLineByLine(t *testing.T) {
	patterns := []string{`hello`, `^hello`, `hello $`, `(?i)HELLO`, `\bend\b`, `^$`, `a\s+b`, `beta.*gamma`,
		`^\s*$`, `x1 $`, `\Aalpha`, `end \z`, `(?s)gamma.hello`, `[^a-z]{3}`, `zzz`}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 5 {
		text := randomText(r)
		for _, p := range patterns {
			line := regexp.MustCompile(p)
			want := naive(line, text)
			for _, every := range []bool{false, true} {
				s := newScanner(line, chunkRegexp(p))
				var got []string
				err := s.scan(strings.NewReader(text), every, func(no int, l []byte, match bool) bool {
					if match {
						got = append(got, fmt.Sprintf("%d:%s", no, l))
					}
					return true
				})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("round %d, pattern %q, every=%v: %d matches, want %d", round, p, every, len(got), len(want))
				}
			}
		}
	}
}

func TestScannerSeesEveryLineInOrder(t *testing.T) {
	text := strings.Repeat("a\n", 70000) + strings.Repeat("b", 200000) + "\nlast"
	s := newScanner(regexp.MustCompile("b"), chunkRegexp("b"))
	next := 1
	err := s.scan(strings.NewReader(text), true, func(no int, l []byte, match bool) bool {
		if no != next {
			t.Fatalf("line %d after %d", no, next-1)
		}
		next++
		return true
	})
	if err != nil || next != 70003 {
		t.Fatalf("saw %d lines, err %v", next-1, err)
	}
}

func TestScannerStopsAndSniffsBinary(t *testing.T) {
	s := newScanner(regexp.MustCompile("x"), nil)
	calls := 0
	err := s.scan(strings.NewReader("x\nx\nx\n"), false, func(int, []byte, bool) bool { calls++; return false })
	if err != nil || calls != 1 {
		t.Fatalf("calls %d, err %v", calls, err)
	}
	bin := append(bytes.Repeat([]byte("x\n"), 100), 0)
	if err := s.scan(bytes.NewReader(bin), false, func(int, []byte, bool) bool { return true }); err != errBinary {
		t.Fatalf("err = %v, want errBinary", err)
	}
	// A NUL after the first 8 KiB does not make the file binary.
	late := append(bytes.Repeat([]byte("x\n"), 5000), 0)
	if err := s.scan(bytes.NewReader(late), false, func(int, []byte, bool) bool { return true }); err != nil {
		t.Fatalf("err = %v", err)
	}
}
