// Package textfile holds the text handling that the read and edit tools
// share: telling text from binary content, splitting text into lines that
// remember their own endings (so LF, CRLF and a missing final newline survive
// an edit unchanged), and formatting numbered lines for the model.
package textfile

import "unicode/utf8"

// SniffLen is how much of a file IsBinary needs to look at.
const SniffLen = 8192

// IsBinary reports whether sample, the start of a file, looks like binary
// data rather than text. A NUL byte decides it, as it does for git and grep;
// otherwise more than one byte in ten being a control character or part of
// an invalid UTF-8 sequence does. The threshold keeps Latin-1 text with a few
// accented letters readable while refusing images, archives and executables.
// UTF-16 text contains NUL bytes and counts as binary.
func IsBinary(sample []byte) bool {
	if len(sample) > SniffLen {
		sample = sample[:SniffLen]
	}
	odd := 0
	for i := 0; i < len(sample); {
		b := sample[i]
		if b == 0 {
			return true
		}
		if b < utf8.RuneSelf {
			if b < 0x20 && !isTextControl(b) || b == 0x7f {
				odd++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(sample[i:])
		if r == utf8.RuneError && size == 1 {
			// A rune cut in half by the end of the sample is not evidence.
			if len(sample)-i < utf8.UTFMax && !utf8.FullRune(sample[i:]) {
				break
			}
			odd++
		}
		i += size
	}
	return odd*10 > len(sample)
}

// isTextControl reports the control characters that plain text uses: tab,
// newline, vertical tab, form feed, carriage return, backspace and escape
// (ANSI colour codes in logs).
func isTextControl(b byte) bool {
	switch b {
	case '\t', '\n', '\v', '\f', '\r', '\b', 0x1b:
		return true
	}
	return false
}
