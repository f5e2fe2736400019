package read

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
	"github.com/ruleagent/ruleagent/tools/textfile"
)

// readers are pooled: a 64 KiB buffer per call would be most of what a
// read costs. Nothing read through one outlives the call (lines are copied).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// readFile shows a file, or part of it, with line numbers.
func (t *Tool) readFile(ctx context.Context, a Args) (string, error) {
	if strings.TrimSpace(a.Path) == "" {
		return "", tools.Errorf(tools.ErrInvalidArgs, "path is required for operation file")
	}
	if err := checkRange(a.LineFrom, a.LineTo); err != nil {
		return "", err
	}
	rel, fi, err := filetool.StatFile(t.ws, a.Path)
	if err != nil {
		return "", err
	}
	ranged := a.LineFrom > 0 || a.LineTo > 0
	whole := fi.Size() <= t.cfg.MaxFileSize
	if !whole && !ranged {
		return "", tools.Errorf(tools.ErrInvalidArgs,
			"%s is %s, over the %s limit for reading a whole file; read part of it with line_from and line_to (for example line_from=1, line_to=200), or search it",
			rel, filetool.Size(fi.Size()), filetool.Size(t.cfg.MaxFileSize))
	}
	_, f, _, err := t.ws.Open(rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var src io.Reader = f
	if whole {
		// The file may grow after the size check; read no more than allowed.
		src = io.LimitReader(f, t.cfg.MaxFileSize)
	}
	r := readers.Get().(*bufio.Reader)
	r.Reset(src)
	defer func() {
		r.Reset(nil)
		readers.Put(r)
	}()
	sample, _ := r.Peek(textfile.SniffLen)
	if textfile.IsBinary(sample) {
		return "", tools.Errorf(tools.ErrInvalidArgs, "%s looks like a binary file (%s); read shows text files only", rel, filetool.Size(fi.Size()))
	}
	if fi.Size() == 0 {
		return fmt.Sprintf("%s is empty (0 bytes)", rel), nil
	}

	from := max(a.LineFrom, 1)
	to := from + t.cfg.MaxReadLines - 1
	if a.LineTo > 0 && a.LineTo < to {
		to = a.LineTo
	}
	// Count every line of a file small enough to read whole, so the header
	// can say how much is left; stop early in a larger one.
	s, err := scanLines(ctx, r, from, to, whole)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return "", filetool.CtxError(cerr, "read")
		}
		return "", tools.Wrap(tools.ErrExecutionFailed, err, "reading %s", rel)
	}
	if from > s.total {
		return "", tools.Errorf(tools.ErrInvalidArgs, "line_from %d is past the end of %s, which has %d lines", from, rel, s.total)
	}
	last := from + len(s.lines) - 1

	more := len(s.lines) == t.cfg.MaxReadLines && (a.LineTo == 0 || a.LineTo > last)
	var b strings.Builder
	switch {
	case !whole && more:
		fmt.Fprintf(&b, "%s: lines %d-%d (the file is %s, too large to count its lines; at most %d lines per read; continue with line_from=%d)\n",
			rel, from, last, filetool.Size(fi.Size()), t.cfg.MaxReadLines, last+1)
	case !whole:
		fmt.Fprintf(&b, "%s: lines %d-%d (the file is %s, too large to count its lines)\n", rel, from, last, filetool.Size(fi.Size()))
	case from == 1 && last == s.total:
		fmt.Fprintf(&b, "%s (%d lines, %s)\n", rel, s.total, filetool.Size(fi.Size()))
	case more && last < s.total:
		fmt.Fprintf(&b, "%s: lines %d-%d of %d (at most %d lines per read; continue with line_from=%d)\n", rel, from, last, s.total, t.cfg.MaxReadLines, last+1)
	default:
		fmt.Fprintf(&b, "%s: lines %d-%d of %d\n", rel, from, last, s.total)
	}
	textfile.WriteNumbered(&b, from, s.lines)
	return b.String(), nil
}

func checkRange(from, to int) error {
	switch {
	case from < 0 || to < 0:
		return tools.Errorf(tools.ErrInvalidArgs, "line numbers start at 1; got line_from=%d, line_to=%d", from, to)
	case to > 0 && from > to:
		return tools.Errorf(tools.ErrInvalidArgs, "line_from %d is after line_to %d", from, to)
	}
	return nil
}

// scanned is what scanLines found: the lines in the asked range and how many
// lines it saw in all.
type scanned struct {
	lines []string
	total int
}

// scanLines collects lines from..to (1-based, inclusive) of r. With countAll
// it reads to the end to count every line; otherwise it stops after to. Only
// the first MaxLineBytes of a line are kept in memory, however long it is.
// Skipping to a far line of a huge file takes a while, so the context is
// checked on the way.
func scanLines(ctx context.Context, r *bufio.Reader, from, to int, countAll bool) (scanned, error) {
	var s scanned
	var keep bytes.Buffer
	full := 0
	for {
		if s.total%4096 == 0 && full == 0 {
			if err := ctx.Err(); err != nil {
				return s, err
			}
		}
		chunk, err := r.ReadSlice('\n')
		n := s.total + 1
		if n >= from && n <= to && keep.Len() < textfile.MaxLineBytes+4 {
			keep.Write(chunk[:min(len(chunk), textfile.MaxLineBytes+4-keep.Len())])
		}
		full += len(chunk)
		if err == bufio.ErrBufferFull {
			continue
		}
		if full > 0 {
			s.total = n
			if n >= from && n <= to {
				s.lines = append(s.lines, lineText(keep.Bytes(), full))
			}
		}
		keep.Reset()
		full = 0
		if err == io.EOF {
			return s, nil
		}
		if err != nil {
			return s, err
		}
		if !countAll && s.total >= to {
			return s, nil
		}
	}
}

// lineText turns the kept start of a line into display text: without its
// line ending, and marked as cut when the line was longer than what was kept.
func lineText(kept []byte, full int) string {
	text := string(bytes.TrimRight(kept, "\r\n"))
	if full > textfile.MaxLineBytes+2 || len(text) > textfile.MaxLineBytes {
		return textfile.Cut(text, textfile.MaxLineBytes) + fmt.Sprintf(" … [line cut, %d bytes in all]", full)
	}
	return text
}
