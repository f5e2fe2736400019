package scrub

import (
	"strings"
	"testing"
)

// splits returns every way of cutting text into n non-empty pieces whose
// cuts all fall within [lo, hi] (the secret's range, so that every split
// of the secret itself is tried).
func splits(text string, n, lo, hi int) [][]string {
	var out [][]string
	var rec func(from, left int, acc []string)
	rec = func(from, left int, acc []string) {
		if left == 1 {
			out = append(out, append(append([]string(nil), acc...), text[from:]))
			return
		}
		for cut := max(from+1, lo); cut <= hi && cut < len(text); cut++ {
			rec(cut, left-1, append(acc, text[from:cut]))
		}
	}
	rec(0, n, nil)
	return out
}

// wantPieces is the oracle: each piece keeps its bytes outside the
// secret's range [s, e), and the piece holding byte s gets the marker
// where the secret began.
func wantPieces(pieces []string, s, e int) []string {
	out := make([]string, len(pieces))
	off := 0
	for i, p := range pieces {
		var b strings.Builder
		for k := 0; k < len(p); k++ {
			g := off + k
			if g == s {
				b.WriteString(Redacted)
			}
			if g < s || g >= e {
				b.WriteByte(p[k])
			}
		}
		out[i] = b.String()
		off += len(p)
	}
	return out
}

// TestRedactPiecesAtEverySplit: a registered secret and a token (a
// GitHub token, a JWT), cut into 2 and 3 pieces at every position, are
// redacted whole: no piece keeps any byte of the secret, the piece where
// it began holds the marker, the text around it is kept, and the pieces
// joined are the joined text scrubbed.
func TestRedactPiecesAtEverySplit(t *testing.T) {
	s := New().Child()
	const registered = "zq9-plain-4471"
	s.AddSecrets(registered)
	for _, secret := range []string{registered, githubPAT, jwtToken} {
		text := "The key: " + secret + " works."
		lo := strings.Index(text, secret)
		hi := lo + len(secret)
		for _, n := range []int{2, 3} {
			cases := splits(text, n, lo, hi)
			if len(cases) < len(secret) {
				t.Fatalf("%d splits of %q into %d", len(cases), secret, n)
			}
			for _, pieces := range cases {
				joined := strings.Join(pieces, "")
				got, changed := RedactPieces(pieces, s.Find(joined, nil))
				if !changed {
					t.Fatalf("%q: nothing redacted", pieces)
				}
				want := wantPieces(pieces, lo, hi)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%q -> %q, want %q", pieces, got, want)
					}
				}
				if g := strings.Join(got, ""); g != s.Scrub(joined) || g != "The key: "+Redacted+" works." {
					t.Fatalf("%q joined: %q", pieces, g)
				}
			}
		}
	}
}

// TestRedactPiecesKeepsCleanText: pieces with no secret are returned as
// they are; two secrets in one piece and one spanning three are each
// redacted once.
func TestRedactPiecesKeepsCleanText(t *testing.T) {
	s := New()
	clean := []string{"no ", "secret ", "here"}
	if got, changed := RedactPieces(clean, s.Find(strings.Join(clean, ""), nil)); changed || &got[0] != &clean[0] {
		t.Fatalf("clean pieces changed: %q", got)
	}
	pieces := []string{"a " + githubPAT + " b " + npmToken[:5], npmToken[5:9], npmToken[9:] + " c", "", " d"}
	got, _ := RedactPieces(pieces, s.Find(strings.Join(pieces, ""), nil))
	want := []string{"a [REDACTED] b [REDACTED]", "", " c", "", " d"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestMergeSpansAsScrub: spans found by two scrubbers over one text,
// merged, redact as one scrubber holding both secrets would.
func TestMergeSpansAsScrub(t *testing.T) {
	a, b, both := New().Child(), New().Child(), New().Child()
	a.AddSecrets("alpha-secret-1")
	b.AddSecrets("secret-1-beta")
	both.AddSecrets("alpha-secret-1", "secret-1-beta")
	text := "x alpha-secret-1-beta y alpha-secret-1 z"
	spans := MergeSpans(b.Find(text, a.Find(text, nil)))
	got, _ := RedactPieces([]string{text}, spans)
	if got[0] != both.Scrub(text) || got[0] != "x [REDACTED] y [REDACTED] z" {
		t.Fatalf("got %q, want %q", got[0], both.Scrub(text))
	}
}
