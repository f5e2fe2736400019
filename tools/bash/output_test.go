package bash

import (
	"bytes"
	"strings"
	"testing"
)

func TestCaptureKeepsEverythingUnderTheLimit(t *testing.T) {
	c := newCapture(100)
	c.Write([]byte("hello "))
	c.Write([]byte("world"))
	if got := c.String(); got != "hello world" {
		t.Fatalf("got %q", got)
	}
	exact := newCapture(10)
	exact.Write([]byte("0123456789"))
	if got := exact.String(); got != "0123456789" {
		t.Fatalf("at the limit: got %q", got)
	}
}

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	data := "HEAD" + strings.Repeat("x", 10000) + "TAIL"
	whole := newCapture(100)
	whole.Write([]byte(data))
	pieces := newCapture(100)
	for i := 0; i < len(data); i += 7 {
		pieces.Write([]byte(data[i:min(i+7, len(data))]))
	}
	for name, c := range map[string]*capture{"one write": whole, "many writes": pieces} {
		got := c.String()
		if !strings.HasPrefix(got, "HEAD") || !strings.HasSuffix(got, "TAIL") {
			t.Errorf("%s: lost head or tail: %q", name, got)
		}
		if !strings.Contains(got, "[... 9908 bytes cut") {
			t.Errorf("%s: missing or wrong cut notice: %q", name, got)
		}
		if c.Total() != int64(len(data)) {
			t.Errorf("%s: total %d, want %d", name, c.Total(), len(data))
		}
		if kept := len(got) - len(between(got, "\n[", "]\n")); kept > 100 {
			t.Errorf("%s: kept %d bytes of output, limit 100", name, kept)
		}
	}
}

func between(s, open, close string) string {
	i := strings.Index(s, open)
	j := strings.LastIndex(s, close)
	if i < 0 || j < i {
		return ""
	}
	return s[i : j+len(close)]
}

func TestCaptureCutsOnRuneBoundaries(t *testing.T) {
	c := newCapture(11)
	c.Write(bytes.Repeat([]byte("é"), 50)) // 2 bytes each
	got := c.String()
	if strings.ContainsRune(got, '\uFFFD') {
		t.Fatalf("cut split a rune: %q", got)
	}
	if !strings.HasPrefix(got, "ééé") || !strings.HasSuffix(got, "éé") {
		t.Fatalf("got %q", got)
	}
}
