package scrub

import "strings"

// The scanner walks the text once. Every byte costs one table lookup; the
// detectors run only at the few places where a secret can start:
//   - at the start of a word whose first byte begins a known token prefix
//     (tokens.go),
//   - at ':' and '=' (assignments in assign.go, URL passwords in blocks.go),
//   - at '-' (PEM private key blocks in blocks.go).
// Tokens must start a word: a prefix in the middle of a longer word (base64
// of something else, an identifier) is not a secret format.

const (
	clsOther   = 0
	clsWord    = 1 // [A-Za-z0-9_]
	clsTrigger = 2 // ':', '=', '-'
)

var byteClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = clsWord
		t[c-'a'+'A'] = clsWord
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = clsWord
	}
	t['_'] = clsWord
	t[':'] = clsTrigger
	t['='] = clsTrigger
	t['-'] = clsTrigger
	return t
}()

// scanPatterns appends the spans of every static-pattern secret in text.
func scanPatterns(text string, spans []span) []span {
	n := len(text)
	for i := 0; i < n; {
		c := text[i]
		switch byteClass[c] {
		case clsWord:
			start := i
			for i++; i < n && byteClass[text[i]] == clsWord; i++ {
			}
			if start+1 < n && mayStartSecret(c, text[start+1]) {
				if sp, ok := wordSecret(text, start, i); ok {
					spans = append(spans, sp)
					i = max(i, sp.end)
				}
			}
		case clsTrigger:
			var sp span
			var ok bool
			next := i + 1
			switch c {
			case '-':
				sp, ok, next = pemBlock(text, i)
			case ':':
				if sp, ok = urlPassword(text, i); !ok {
					sp, ok, next = assignment(text, i)
				}
			case '=':
				sp, ok, next = assignment(text, i)
			}
			if ok {
				spans = append(spans, sp)
			}
			i = max(next, i+1)
		default:
			i++
		}
	}
	return spans
}

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// looksRandom reports whether s has a digit or both upper and lower case
// letters. Random credentials of 10+ characters almost always do; words,
// kebab-case names and placeholders such as YOUR_API_KEY do not.
func looksRandom(s string) bool {
	var upper, lower bool
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			return true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		}
	}
	return upper && lower
}

// lineEnd returns the index of the end of the line containing i.
func lineEnd(text string, i int) int {
	for ; i < len(text); i++ {
		if text[i] == '\n' {
			return i
		}
	}
	return len(text)
}

// isMasked reports values that are already redacted, masked or elided
// (Redacted, ****, xxxx, ...), so that scrubbing scrubbed text, or a
// document's example, changes nothing.
func isMasked(v string) bool {
	if v == Redacted {
		return true
	}
	v = strings.TrimRight(v, ")]},;")
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '*', '.', 'x', 'X', '#':
		default:
			return false
		}
	}
	return true
}
