package scrub

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestAddSecrets(t *testing.T) {
	s := New()
	s.AddSecrets("  opensesame-42\n", "short", "", "a&b<c>d/e+f")
	cases := []struct{ in, want string }{
		{"the value opensesame-42 appears", "the value [REDACTED] appears"},
		{"glued:xopensesame-42x", "glued:x[REDACTED]x"},
		{"twice opensesame-42opensesame-42", "twice [REDACTED]"},
		{"short values are ignored: short", "short values are ignored: short"},
		{"url form ?q=a%26b%3Cc%3Ed%2Fe%2Bf", "url form ?q=[REDACTED]"},
		{`go json form "a\u0026b\u003cc\u003ed/e+f"`, `go json form "[REDACTED]"`},
		{"raw a&b<c>d/e+f", "raw [REDACTED]"},
	}
	for _, c := range cases {
		if got := s.Scrub(c.in); got != c.want {
			t.Errorf("Scrub(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestOverlappingSecretsAreRedactedOnce(t *testing.T) {
	s := New()
	s.AddSecrets("abcdef123", "def123xyz")
	if got := s.Scrub("[abcdef123xyz]"); got != "["+Redacted+"]" {
		t.Fatalf("got %q", got)
	}
	// A registered value inside a pattern match.
	s.AddSecrets("hunter2hunter2")
	if got := s.Scrub("DB_PASSWORD=hunter2hunter2"); got != "DB_PASSWORD="+Redacted {
		t.Fatalf("got %q", got)
	}
}

func TestChildIsolation(t *testing.T) {
	parent := New()
	parent.AddSecrets("process-wide-secret")
	runA, runB := parent.Child(), parent.Child()
	runA.AddSecrets("run-a-secret-value")
	runB.AddSecrets("run-b-secret-value")
	parent.AddSecrets("added-after-children")

	text := "process-wide-secret run-a-secret-value run-b-secret-value added-after-children"
	cases := []struct {
		name string
		s    *Scrubber
		want string
	}{
		{"parent", parent, "[REDACTED] run-a-secret-value run-b-secret-value [REDACTED]"},
		{"run A", runA, "[REDACTED] [REDACTED] run-b-secret-value [REDACTED]"},
		{"run B", runB, "[REDACTED] run-a-secret-value [REDACTED] [REDACTED]"},
		{"grandchild of A", runA.Child(), "[REDACTED] [REDACTED] run-b-secret-value [REDACTED]"},
	}
	for _, c := range cases {
		if got := c.s.Scrub(text); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// TestConcurrentUse is meant for -race: runs scrub while secrets are added
// to the parent and to their own children.
func TestConcurrentUse(t *testing.T) {
	parent := New()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			child := parent.Child()
			for i := range 200 {
				secret := fmt.Sprintf("secret-%d-%d-value", g, i)
				child.AddSecrets(secret)
				if i%20 == 0 {
					parent.AddSecrets(fmt.Sprintf("shared-%d-%d-value", g, i))
				}
				got := child.Scrub("x " + secret + " DB_PASSWORD=hunter2hunter2")
				if strings.Contains(got, secret) || strings.Contains(got, "hunter2") {
					t.Errorf("leak: %q", got)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := parent.Scrub("secret-0-0-value shared-0-0-value"); got != "secret-0-0-value "+Redacted {
		t.Fatalf("parent: %q", got)
	}
}
