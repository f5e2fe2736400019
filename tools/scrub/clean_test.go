package scrub

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// TestScrubLeavesOrdinaryTextAlone runs the scrubber over code, configs,
// shell sessions and prose that mention passwords, tokens and keys without
// containing any, and over each of their lines alone.
func TestScrubLeavesOrdinaryTextAlone(t *testing.T) {
	files, err := filepath.Glob("testdata/clean/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test corpus: %v", err)
	}
	s := New()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if got := s.Scrub(text); got != text {
			t.Errorf("%s: changed\n%s", f, diffLines(text, got))
		}
		for line := range strings.Lines(text) {
			if got := s.Scrub(line); got != line {
				t.Errorf("%s: line changed\n got %q\nfrom %q", f, got, line)
			}
		}
	}
}

func TestScrubReturnsTheSameStringWithoutAllocating(t *testing.T) {
	s := New()
	s.AddSecrets("registered-value-123")
	text := "func main() { fmt.Println(\"hello\", x == y, m[key]) }\n"
	if got := s.Scrub(text); unsafe.StringData(got) != unsafe.StringData(text) {
		t.Fatal("clean text was copied")
	}
	if n := testing.AllocsPerRun(100, func() { s.Scrub(text) }); n != 0 {
		t.Fatalf("clean text: %v allocations per call, want 0", n)
	}
}

func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			out.WriteString("- " + al[i] + "\n+ " + bl[i] + "\n")
		}
	}
	return out.String()
}
