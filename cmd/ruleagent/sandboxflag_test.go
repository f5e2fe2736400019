package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools/sandbox"
)

func TestVersionAndToolsSaySandbox(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"version"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "\nsandbox: ") {
		t.Fatalf("version: %d %q %q", code, out.String(), errb.String())
	}
	want := "not confined"
	if sandbox.Describe().Available {
		want = "confined by Landlock"
	}
	if !strings.Contains(out.String(), want) {
		t.Fatalf("version should say %q:\n%s", want, out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"tools", "--json"}, nil, &out, &errb); code != 0 {
		t.Fatalf("tools --json: %d %s", code, errb.String())
	}
	var doc struct {
		Builtins []struct {
			Name    string          `json:"name"`
			Sandbox *sandbox.Status `json:"sandbox"`
		} `json:"builtins"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, b := range doc.Builtins {
		if b.Name == "bash" {
			found = b.Sandbox != nil && b.Sandbox.Available == sandbox.Describe().Available && b.Sandbox.DefaultMode != ""
		} else if b.Sandbox != nil {
			t.Errorf("%s lists a sandbox", b.Name)
		}
	}
	if !found {
		t.Fatalf("the bash entry does not describe the sandbox:\n%s", out.String())
	}
}

func TestSandboxFlagIsChecked(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"run", "x.json", "--sandbox", "sometimes"}, nil, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "--sandbox") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	t.Cleanup(func() { _ = sandbox.SetDefaults(sandbox.Defaults{}) })
	if err := setSandboxDefault("required", "data"); err != nil || sandbox.DefaultMode() != sandbox.Required || len(sandbox.DefaultHidden()) != 1 {
		t.Fatalf("setSandboxDefault: %v %q %q", err, sandbox.DefaultMode(), sandbox.DefaultHidden())
	}
}
