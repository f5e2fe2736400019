package textfile

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxLineBytes is how much of one line is shown to the model. A minified
// bundle can be one line of megabytes; showing its start and saying how long
// it is serves the model better than spending its whole output budget on it.
const MaxLineBytes = 2000

// WriteNumbered writes lines to b as `cat -n` does: the 1-based line number,
// right-aligned to the width of the largest, a tab, and the text. first is
// the number of lines[0]. Callers shorten overlong lines first (Clip), as
// only they know a line's full length when they kept just its start.
func WriteNumbered(b *strings.Builder, first int, lines []string) {
	width := len(strconv.Itoa(first + len(lines) - 1))
	for i, l := range lines {
		if !utf8.ValidString(l) {
			l = strings.ToValidUTF8(l, "\uFFFD")
		}
		fmt.Fprintf(b, "%*d\t%s\n", width, first+i, l)
	}
}

// Clip shortens s to at most max bytes without splitting a UTF-8 sequence,
// and says how long it was.
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return Cut(s, max) + fmt.Sprintf(" … [line cut, %d bytes in all]", len(s))
}

// Cut returns the longest prefix of s of at most max bytes that ends on a
// rune boundary.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
