// Package scrub redacts secrets from text before it reaches the model, the
// event stream or the logs.
//
// Two kinds of secrets are found:
//   - static patterns: well-known token formats (OpenAI, Anthropic, GitHub,
//     Slack, AWS, Google, Stripe, npm, JWT, PEM private keys, ...), Bearer
//     credentials, passwords in URLs, and values assigned to names that say
//     they are secret (DB_PASSWORD=..., "api_key": "...");
//   - exact values registered at run time with AddSecrets, such as the API
//     key a tool was configured with.
//
// Scrub runs on every tool result and event, so the clean path is one pass
// over the bytes with a table lookup per byte and no allocation; the more
// expensive checks run only where a candidate starts. There is deliberately
// no marker or comment that disables scrubbing: whatever could write such a
// marker (the model, a file it reads) is exactly what must not control it.
package scrub

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Redacted replaces every secret.
const Redacted = "[REDACTED]"

// minSecretLen is the shortest value AddSecrets accepts: shorter values
// would redact ordinary words and numbers all over the output.
const minSecretLen = 6

// Scrubber redacts secrets from text. Safe for concurrent use.
//
// The zero value and a nil *Scrubber apply the static patterns only.
type Scrubber struct {
	parent *Scrubber
	// values is copy-on-write so that Scrub never takes a lock.
	values atomic.Pointer[[]string]
	mu     sync.Mutex // serialises AddSecrets
	seen   map[string]struct{}
}

// New returns a scrubber with the static patterns only.
func New() *Scrubber { return &Scrubber{} }

// Child returns a scrubber that applies s's patterns and values, including
// values added to s later, plus its own. Values added to the child never
// reach s, so per-run secrets stay in their run.
func (s *Scrubber) Child() *Scrubber { return &Scrubber{parent: s} }

// AddSecrets registers exact values to redact. Surrounding whitespace is
// trimmed, and values shorter than 6 bytes are ignored. The URL-escaped and
// JSON-escaped forms of a value are registered with it, because secrets
// often reappear inside URLs and JSON documents (see urlForms).
func (s *Scrubber) AddSecrets(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cur []string
	if p := s.values.Load(); p != nil {
		cur = *p
	}
	next := cur
	add := func(v string) {
		if len(v) < minSecretLen {
			return
		}
		if _, dup := s.seen[v]; dup {
			return
		}
		if s.seen == nil {
			s.seen = map[string]struct{}{}
		}
		s.seen[v] = struct{}{}
		if len(next) == len(cur) {
			// First addition in this call: copy so readers of the
			// old slice are unaffected.
			next = slices.Clip(slices.Clone(cur))
		}
		next = append(next, v)
	}
	for _, v := range values {
		v = strings.TrimSpace(v)
		add(v)
		if len(v) >= minSecretLen {
			for _, f := range urlForms(v) {
				add(f)
			}
			add(jsonEscape(v, false))
			add(jsonEscape(v, true))
		}
	}
	if len(next) != len(cur) {
		s.values.Store(&next)
	}
}

// Scrub returns text with every secret replaced by Redacted. When nothing
// matches it returns text itself without allocating.
func (s *Scrubber) Scrub(text string) string {
	if text == "" {
		return text
	}
	var buf [8]span
	spans := scanPatterns(text, buf[:0])
	for sc := s; sc != nil; sc = sc.parent {
		if p := sc.values.Load(); p != nil {
			for _, v := range *p {
				spans = findExact(text, v, spans)
			}
		}
	}
	if len(spans) == 0 {
		return text
	}
	return redact(text, spans)
}

// span is a byte range [start, end) of text to replace.
type span struct{ start, end int }

// findExact appends every occurrence of v in text.
func findExact(text, v string, spans []span) []span {
	for off := 0; off < len(text); {
		i := strings.Index(text[off:], v)
		if i < 0 {
			break
		}
		spans = append(spans, span{off + i, off + i + len(v)})
		off += i + len(v)
	}
	return spans
}

// redact replaces the union of spans with Redacted. Overlapping and
// touching spans become one redaction, so a secret found by two detectors
// is not reported twice.
func redact(text string, spans []span) string {
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for i := 0; i < len(spans); {
		start, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start <= end; i++ {
			end = max(end, spans[i].end)
		}
		start = max(start, last)
		if start > last {
			b.WriteString(text[last:start])
		}
		b.WriteString(Redacted)
		last = end
	}
	b.WriteString(text[last:])
	return b.String()
}

// urlForms are the ways URL encoders write v: a query value (space as
// "+"), the same with "%20" (Go's url.Values, PHP's rawurlencode), a path
// segment, JavaScript's encodeURIComponent; each with upper- and
// lower-case hex digits. Forms equal to v are dropped by the caller's
// de-duplication.
func urlForms(v string) []string {
	query := url.QueryEscape(v)
	forms := []string{query, strings.ReplaceAll(query, "+", "%20"), url.PathEscape(v), percentEncode(v, uriComponentKeeps)}
	for _, f := range forms[:4] {
		if lower := lowerHex(f); lower != f {
			forms = append(forms, lower)
		}
	}
	return forms
}

// uriComponentKeeps are the bytes encodeURIComponent leaves as they are.
func uriComponentKeeps(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0
}

// percentEncode writes every byte keep refuses as %XX.
func percentEncode(v string, keep func(byte) bool) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if c := v[i]; keep(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// lowerHex rewrites the hex digits of f's %XX escapes in lower case.
func lowerHex(f string) string {
	if !strings.Contains(f, "%") {
		return f
	}
	b := []byte(f)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			for j := i + 1; j <= i+2; j++ {
				if 'A' <= b[j] && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
			i += 2
		}
	}
	return string(b)
}

// jsonEscape returns v as it appears inside a JSON string; with html, as
// Go's encoding/json writes it by default (<, > and & as \u escapes).
func jsonEscape(v string, html bool) string {
	if !strings.ContainsAny(v, "\"\\\n\r\t<>&") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '<', '>', '&':
			if html {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
