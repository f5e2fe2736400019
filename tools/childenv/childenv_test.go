package childenv

import (
	"slices"
	"strings"
	"testing"
)

func TestBuild(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-must-not-pass")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("PATH", "")
	env := Build(map[string]string{"EXTRA": "1", "LANG": "de_DE.UTF-8"})
	if !slices.IsSorted(env) || !slices.Contains(env, "EXTRA=1") || !slices.Contains(env, "LANG=de_DE.UTF-8") ||
		!slices.Contains(env, "PATH="+FallbackPath) {
		t.Fatalf("%v", env)
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "OPENAI_API_KEY=") {
			t.Fatal("a secret was inherited")
		}
	}
}
