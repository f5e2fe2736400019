package bash

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

type secretSink struct{ values []string }

func (s *secretSink) AddSecrets(v ...string) { s.values = append(s.values, v...) }

func newTool(t testing.TB, config string) *Tool {
	t.Helper()
	tool, err := New(tools.BuildContext{WorkDir: t.TempDir()}, json.RawMessage(config))
	if err != nil {
		t.Fatalf("New(%s): %v", config, err)
	}
	t.Cleanup(func() { tool.(*Tool).Close() })
	return tool.(*Tool)
}

func TestBadConfigNamesTheField(t *testing.T) {
	notAShell := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(notAShell, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		config string
		field  string
	}{
		{`{"mode":"block"}`, "mode"},
		{`{"mode":""}`, "mode"},
		{`{"mode":"allow"}`, "allow"},
		{`{"mode":"allow","allow":["/bin/ls"]}`, "allow[0]"},
		{`{"shellPath":"sh"}`, "shellPath"},
		{`{"shellPath":""}`, "shellPath"},
		{`{"shellPath":"/nonexistent/sh"}`, "shellPath"},
		{`{"shellPath":"/etc/hostname"}`, "shellPath"},
		{`{"shellPath":"` + notAShell + `"}`, "shellPath"},
		{`{"env":{"BASH_ENV":"/tmp/x"}}`, "env.BASH_ENV"},
		{`{"env":{"ENV":"/tmp/x"}}`, "env.ENV"},
		{`{"env":{"LD_PRELOAD":"/tmp/x.so"}}`, "env.LD_PRELOAD"},
		{`{"env":{"LD_LIBRARY_PATH":"/tmp"}}`, "env.LD_LIBRARY_PATH"},
		{`{"env":{"DYLD_INSERT_LIBRARIES":"x"}}`, "env.DYLD_INSERT_LIBRARIES"},
		{`{"env":{"PROMPT_COMMAND":"id"}}`, "env.PROMPT_COMMAND"},
		{`{"env":{"BASH_FUNC_ls":"() { id; }"}}`, "env.BASH_FUNC_ls"},
		{`{"env":{"BASH_FUNC_ls%%":"() { id; }"}}`, "env.BASH_FUNC_ls%%"},
		{`{"env":{"1BAD":"x"}}`, "env.1BAD"},
		{`{"env":{"A-B":"x"}}`, "env.A-B"},
		{`{"allowGroups":["network"]}`, "allowGroups[0]"},
		{`{"allowGroups":["destructive","nope"]}`, "allowGroups[1]"},
		{`{"timeout":0}`, "timeout"},
		{`{"timeout":"0s"}`, "timeout"},
		{`{"maxOutputSize":0}`, "maxOutputSize"},
		{`{"maxOutputSize":999999999}`, "maxOutputSize"},
		{`{"deny":[""]}`, "deny[0]"},
		{`{"deny":["rm -rf","mkfs["]}`, "deny[1]"},
		{`{"denyArgs":["a b"]}`, "denyArgs[0]"},
		{`{"bogus":1}`, "bogus"},
		{`{"allow":"ls"}`, "allow"},
	}
	for _, tc := range cases {
		_, err := New(tools.BuildContext{WorkDir: t.TempDir()}, json.RawMessage(tc.config))
		var ce *tools.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: want *tools.ConfigError, got %v", tc.config, err)
			continue
		}
		if ce.Path != tc.field {
			t.Errorf("%s: error names %q, want %q (%v)", tc.config, ce.Path, tc.field, err)
		}
	}
	for _, bad := range []string{`{"timeout":"soon"}`, `[1]`, `{"timeout":-5}`} {
		if _, err := New(tools.BuildContext{WorkDir: t.TempDir()}, json.RawMessage(bad)); !errors.Is(err, tools.ErrConfig) {
			t.Errorf("%s: want a config error, got %v", bad, err)
		}
	}
}

func TestGoodConfig(t *testing.T) {
	dir := t.TempDir()
	sink := &secretSink{}
	raw := `{"workDir":"` + dir + `","timeout":"2s","maxOutputSize":1000,"mode":"allow","allow":["ls","echo"],
		"deny":["ls -R"],"denyArgs":["/etc/shadow"],"allowGroups":["network_tools_do_not_exist"]}`
	if _, err := New(tools.BuildContext{Secrets: sink}, json.RawMessage(raw)); err == nil {
		t.Fatal("an unknown group must fail")
	}
	raw = `{"workDir":"` + dir + `","timeout":2000,"maxOutputSize":1000,"mode":"allow","allow":["ls","echo"],
		"deny":["ls -R"],"denyArgs":["/etc/shadow"],"allowGroups":["env_read"],"shellPath":"/bin/bash",
		"env":{"API_TOKEN":"tok-123456","EMPTY":""}}`
	tool, err := New(tools.BuildContext{Secrets: sink}, json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer tool.(*Tool).Close()
	bt := tool.(*Tool)
	if bt.cfg.Timeout.D().Milliseconds() != 2000 || bt.ws.Dir() != dir || bt.policy.enabled(groupEnvRead) || !bt.policy.enabled(groupDestructive) {
		t.Fatalf("config not applied: %+v", bt.cfg)
	}
	if !slices.Equal(sink.values, []string{"tok-123456"}) {
		t.Fatalf("secrets registered: %q", sink.values)
	}
	if !strings.Contains(bt.Info().Description, "ls, echo") {
		t.Fatalf("allow mode description should list the commands: %s", bt.Info().Description)
	}
}

func TestRegisteredDefinition(t *testing.T) {
	def, ok := tools.Builtins.Lookup("bash")
	if !ok {
		t.Fatal("bash is not registered")
	}
	var schema struct {
		Properties map[string]struct {
			Description string          `json:"description"`
			Default     json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(def.ConfigSchema, &schema); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"workDir", "timeout", "maxOutputSize", "mode", "allow", "deny", "denyArgs", "allowGroups", "shellPath", "env"} {
		if schema.Properties[field].Description == "" {
			t.Errorf("config field %s has no description", field)
		}
	}
	if string(schema.Properties["timeout"].Default) != `"30s"` || string(schema.Properties["mode"].Default) != `"deny"` {
		t.Errorf("defaults not recorded: %s", def.ConfigSchema)
	}
	var args struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(def.ArgsSchema, &args); err != nil || !slices.Equal(args.Required, []string{"command"}) {
		t.Errorf("args schema: %s (%v)", def.ArgsSchema, err)
	}
}

func TestBadArguments(t *testing.T) {
	tool := newTool(t, `{}`)
	for _, raw := range []string{`{}`, `{"command":""}`, `{"command":"ls","cwd":"x"}`, `{"command":"ls","timeout":0}`,
		`{"command":"ls","timeout":-1}`, `{"command":"ls","timeout":1.5}`, `"ls"`, `{"command":1}`, `not json`} {
		if _, err := tool.Call(t.Context(), json.RawMessage(raw)); !errors.Is(err, tools.ErrInvalidArgs) {
			t.Errorf("%s: want ErrInvalidArgs, got %v", raw, err)
		}
	}
}
