package bash

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// capture collects one output stream, keeping its first and last bytes
// within a limit so that a command printing gigabytes costs a bounded amount
// of memory and still shows how it started and how it ended.
type capture struct {
	mu    sync.Mutex
	limit int
	head  []byte
	tail  []byte // the latest bytes past head, trimmed lazily to tailLimit
	total int64
}

func newCapture(limit int) *capture { return &capture{limit: limit} }

func (c *capture) headLimit() int { return c.limit - c.limit/2 }
func (c *capture) tailLimit() int { return c.limit / 2 }

// Write never fails, so the command never sees a broken pipe because of
// the limit.
func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	rest := p
	if room := c.headLimit() - len(c.head); room > 0 {
		n := min(room, len(rest))
		c.head = append(c.head, rest[:n]...)
		rest = rest[n:]
	}
	if len(rest) == 0 {
		return len(p), nil
	}
	keep := c.tailLimit()
	if len(rest) >= keep {
		c.tail = append(c.tail[:0], rest[len(rest)-keep:]...)
		return len(p), nil
	}
	c.tail = append(c.tail, rest...)
	if len(c.tail) > 2*keep {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-keep:]...)
	}
	return len(p), nil
}

// String returns the kept output as text. When bytes were dropped, a line
// in the middle says how many.
func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := c.tail
	if len(tail) > c.tailLimit() {
		tail = tail[len(tail)-c.tailLimit():]
	}
	cut := c.total - int64(len(c.head)) - int64(len(tail))
	if cut <= 0 {
		return strings.ToValidUTF8(string(c.head)+string(tail), "\uFFFD")
	}
	head := trimPartialRuneEnd(c.head)
	tail = trimPartialRuneStart(tail)
	cut = c.total - int64(len(head)) - int64(len(tail))
	return strings.ToValidUTF8(string(head), "\uFFFD") +
		fmt.Sprintf("\n[... %d bytes cut: output is limited to %d bytes per stream ...]\n", cut, c.limit) +
		strings.ToValidUTF8(string(tail), "\uFFFD")
}

// Total is how many bytes the stream produced.
func (c *capture) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// trimPartialRuneEnd drops an incomplete UTF-8 sequence left at the end by
// the cut.
func trimPartialRuneEnd(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// trimPartialRuneStart drops continuation bytes left at the start by the
// cut.
func trimPartialRuneStart(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}
