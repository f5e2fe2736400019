package chaintool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

func TestFunctionName(t *testing.T) {
	cases := map[string]string{
		"code-reviewer":         "code-reviewer",
		"Code Reviewer":         "Code_Reviewer",
		"  summarizer ":         "summarizer",
		"代码审查":                  "",
		"---":                   "",
		"Review & Fix!":         "Review_Fix_",
		strings.Repeat("x", 80): strings.Repeat("x", 64),
	}
	for in, want := range cases {
		got := FunctionName(in)
		if want == "Review_Fix_" {
			if !strings.HasPrefix(got, "Review_Fix_") || len(got) != len("Review_Fix_")+6 {
				t.Errorf("%q -> %q, want a hashed suffix", in, got)
			}
			continue
		}
		if got != want {
			t.Errorf("%q -> %q, want %q", in, got, want)
		}
		if got != "" && !tools.NamePattern.MatchString(got) {
			t.Errorf("%q -> %q is not a valid name", in, got)
		}
	}
	if FunctionName("a b!") == FunctionName("a b?") {
		t.Error("different names collapsed to one")
	}
}

func TestHideBoundAndFill(t *testing.T) {
	binds, _ := parseBinds(map[string]string{"userId": "metadata.userId", "tenant": "const:acme", "region": "global.region"})
	out, err := hideBound(json.RawMessage(`{"type":"object","properties":{"userId":{"type":"string"},"q":{"type":"string"},"tenant":{},"region":{}},"required":["userId","q"]}`), binds)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"properties":{"q":{"type":"string"}},"required":["q"],"type":"object"}` {
		t.Fatalf("%s", out)
	}
	args := map[string]any{"userId": "mallory", "q": "x"}
	err = fill(args, binds, &tools.BindValues{Metadata: map[string]string{"userId": "alice"}, Global: map[string]string{"region": "eu"}})
	if err != nil || args["userId"] != "alice" || args["tenant"] != "acme" || args["region"] != "eu" {
		t.Fatalf("%v %v", args, err)
	}
	err = fill(map[string]any{}, binds, &tools.BindValues{})
	if !errors.Is(err, tools.ErrExecutionFailed) || !strings.Contains(err.Error(), "not set") {
		t.Fatalf("missing source: %v", err)
	}
}

func TestEnterPath(t *testing.T) {
	p := NewProvider(Options{ChainID: "root", MaxDepth: 2, Invoker: nil})
	ctx, err := p.enter(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	ctx, err = p.enter(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.enter(ctx, "d"); !errors.Is(err, tools.ErrPolicyDenied) || !strings.Contains(err.Error(), "root -> b -> c") {
		t.Fatalf("depth: %v", err)
	}
	if _, err := p.enter(ctx, "b"); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("cycle: %v", err)
	}
	if _, err := p.enter(context.Background(), "root"); err == nil {
		t.Fatal("calling the root again must be a cycle")
	}
}
