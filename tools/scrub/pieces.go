package scrub

import "slices"

// Span is a byte range [Start, End) of a text that Scrub would replace
// with Redacted.
type Span struct{ Start, End int }

// Find appends to spans the secrets of text, as Scrub finds them, and
// returns them merged as Scrub merges them: sorted, with overlapping and
// touching ranges joined, so that redacting each with Redacted gives
// Scrub(text). A nil *Scrubber finds the static patterns only.
func (s *Scrubber) Find(text string, spans []Span) []Span {
	if text == "" {
		return spans
	}
	var buf [8]span
	found := scanPatterns(text, buf[:0])
	for sc := s; sc != nil; sc = sc.parent {
		if p := sc.values.Load(); p != nil {
			for _, v := range *p {
				found = findExact(text, v, found)
			}
		}
	}
	for _, f := range found {
		spans = append(spans, Span{f.start, f.end})
	}
	return MergeSpans(spans)
}

// MergeSpans sorts spans and joins those that overlap or touch, as Scrub
// does with the secrets it finds; spans found by several scrubbers in one
// text so become the redactions any one of them would make together.
func MergeSpans(spans []Span) []Span {
	if len(spans) < 2 {
		return spans
	}
	slices.SortFunc(spans, func(a, b Span) int { return a.Start - b.Start })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.Start <= last.End {
			last.End = max(last.End, sp.End)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// RedactPieces redacts a text that arrived in pieces (the deltas of one
// streamed message, in order), given the merged spans of the whole text
// (Find on the pieces joined). A secret split across pieces is redacted
// as a whole: the piece where a span starts gets Redacted in its place,
// and the rest of the span is removed from that piece and from the ones
// after it. Joined again, the pieces are the joined text scrubbed; a piece
// may come out empty (it held only the rest of a secret). It reports
// whether anything changed; when nothing did, pieces is returned as is.
func RedactPieces(pieces []string, spans []Span) ([]string, bool) {
	if len(spans) == 0 {
		return pieces, false
	}
	out := make([]string, len(pieces))
	start, si := 0, 0 // the piece's offset in the joined text; the first span not behind it
	for i, p := range pieces {
		end := start + len(p)
		for si < len(spans) && spans[si].End <= start {
			si++
		}
		if si == len(spans) || spans[si].Start >= end {
			out[i] = p
			start = end
			continue
		}
		b := make([]byte, 0, len(p)+len(Redacted))
		cur := start
		for j := si; j < len(spans) && spans[j].Start < end; j++ {
			sp := spans[j]
			if sp.Start >= start {
				// The span begins in this piece: its marker goes here.
				b = append(b, p[cur-start:sp.Start-start]...)
				b = append(b, Redacted...)
			}
			cur = min(sp.End, end)
		}
		b = append(b, p[cur-start:]...)
		out[i] = string(b)
		start = end
	}
	return out, true
}
