package grep

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"
)

// The scanner streams a file through a reused buffer, a chunk of whole
// lines at a time, so that memory stays bounded by the longest line rather
// than the file. Most lines of most files do not match; instead of running
// the line expression on every line, the scanner runs the multi-line
// expression once over the chunk to find the next line that could match,
// and only that line is tested on its own. Every line that matches on its
// own also matches inside the chunk, so no match is lost; a chunk match
// that spans lines only costs one extra line test.

const (
	// chunkSize is the buffer's starting size; it grows for longer lines.
	chunkSize = 64 << 10
	// sniffLen is how much of a file is checked for a NUL byte.
	sniffLen = 8 << 10
)

var errBinary = errors.New("binary file")

// lineFunc receives a line (without its line ending), its number from 1,
// and whether it matches. Returning false stops the scan.
type lineFunc func(no int, line []byte, match bool) bool

type scanner struct {
	line  *regexp.Regexp
	chunk *regexp.Regexp // nil: test every line
	// dollar: the pattern has '$', which the multi-line expression
	// places before "\n" but not before "\r\n"; chunks with CRs are then
	// tested line by line.
	dollar bool
	buf    []byte
}

func newScanner(line, chunk *regexp.Regexp) *scanner {
	return &scanner{line: line, chunk: chunk, dollar: strings.Contains(line.String(), "$")}
}

// scan reads r and calls fn. With every, fn sees every line (for context);
// otherwise only the matching ones. It returns errBinary, before calling fn
// at all, when the first 8 KiB hold a NUL byte.
func (s *scanner) scan(r io.Reader, every bool, fn lineFunc) error {
	if cap(s.buf) < chunkSize || cap(s.buf) > 16*chunkSize {
		s.buf = make([]byte, chunkSize) // drop a buffer grown for one long line
	}
	buf := s.buf[:cap(s.buf)]
	n, no := 0, 1
	first, eof := true, false
	for {
		if !eof {
			m, err := io.ReadFull(r, buf[n:])
			n += m
			switch {
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				eof = true
			case err != nil:
				return err
			}
		}
		if first {
			first = false
			if bytes.IndexByte(buf[:min(n, sniffLen)], 0) >= 0 {
				return errBinary
			}
		}
		data := buf[:n]
		chunk := data
		if !eof {
			last := bytes.LastIndexByte(data, '\n')
			if last < 0 {
				// A line longer than the buffer: grow it and read on.
				grown := make([]byte, 2*len(buf))
				copy(grown, data)
				buf, s.buf = grown, grown
				continue
			}
			chunk = data[:last+1]
		}
		var stop bool
		no, stop = s.lines(chunk, no, every, fn)
		if stop || eof {
			return nil
		}
		n = copy(buf, data[len(chunk):])
	}
}

// lines calls fn for the lines of chunk, which holds whole lines (the last
// may lack its newline at the end of the file). It returns the number of
// the next line, and whether fn asked to stop.
func (s *scanner) lines(chunk []byte, no int, every bool, fn lineFunc) (int, bool) {
	prefilter := s.chunk != nil && !(s.dollar && bytes.IndexByte(chunk, '\r') >= 0)
	next := -1 // start of the next place the chunk expression matches
	for pos := 0; pos < len(chunk); {
		if prefilter && next < pos {
			if loc := s.chunk.FindIndex(chunk[pos:]); loc != nil {
				next = pos + loc[0]
			} else {
				next = len(chunk)
			}
		}
		if !every && prefilter {
			// Jump to the line holding the next candidate.
			start := bytes.LastIndexByte(chunk[pos:next], '\n') + 1
			if start > 0 {
				no += bytes.Count(chunk[pos:pos+start], []byte{'\n'})
				pos += start
			}
			if pos >= len(chunk) {
				break
			}
		}
		end := bytes.IndexByte(chunk[pos:], '\n')
		if end < 0 {
			end = len(chunk)
		} else {
			end += pos
		}
		line := bytes.TrimSuffix(chunk[pos:end], []byte{'\r'})
		match := (!prefilter || next <= end) && s.line.Match(line)
		if (every || match) && !fn(no, line, match) {
			return no + 1, true
		}
		pos = end + 1
		no++
	}
	return no, false
}
