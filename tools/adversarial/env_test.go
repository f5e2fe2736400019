package adversarial_test

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// Fake credentials placed in the test process's environment, where an
// agent keeps its API keys. No command may ever print them.
var envSecrets = map[string]string{
	"OPENAI_API_KEY":        "sk-proj-EnvT3stOnly0123456789abcdefghijkl",
	"ANTHROPIC_API_KEY":     "sk-ant-api03-EnvT3stOnly0123456789abcdefghijkl",
	"AWS_SECRET_ACCESS_KEY": "EnvT3stOnlyAwsSecret0123456789abcdefghij",
	"GITHUB_TOKEN":          "ghp_EnvT3stOnly0123456789abcdefghijklmnop",
}

func setEnvSecrets(t *testing.T) {
	t.Helper()
	for k, v := range envSecrets {
		t.Setenv(k, v)
	}
}

// TestHostileEnvironmentReads: commands whose purpose is to print the
// environment, or to make the shell run code the policy cannot see through
// the environment, are refused.
func TestHostileEnvironmentReads(t *testing.T) {
	tool := newBashTool(t, map[string]any{"shellPath": tripwireShell(t)})
	runHostile(t, tool, []hostileShellCase{
		{"printenv", "env_read"},
		{"printenv OPENAI_API_KEY", "env_read"},
		{"env", "env_read"},
		{"env -0", "env_read"},
		{"env | grep KEY", "env_read"},
		{"/usr/bin/env", "env_read"},
		{"set", "env_read"},
		{"export", "env_read"},
		{"export -p", "env_read"},
		{"declare -p", "env_read"},
		{"declare -x", "env_read"},
		{"typeset -x", "env_read"},
		{"compgen -e", "env_read"},
		{"compgen -v", "env_read"},
		{"cat /proc/self/environ", "env_read"},
		{"cat /proc/$PPID/environ", "env_read"},
		{"strings /proc/1/environ", "env_read"},
		{"tr '\\0' '\\n' < /proc/self/environ", "env_read"},
		{"xargs -0 -n1 -a /proc/self/environ echo", "env_read"},
		{"cat /proc/*/environ", "env_read"},
		{"cd /proc/self && cat environ", "env_read"},
		{"ps eww", "env_read"},
		{"sh -c printenv", "env_read"},
		{"eval env", "env_read"},
		{"BASH_ENV=./x.sh bash -c true", "env_injection"},
		{"ENV=./x.sh sh -i", "env_injection"},
		{"export PROMPT_COMMAND=id", "env_injection"},
		{"env 'BASH_FUNC_ls%%=() { id; }' bash -c ls", "env_injection"},
		{"PS4='$(id)' bash -xc true", "env_injection"},
	})
}

// TestEnvironmentDumpsShowNoSecrets runs real dumps of the environment,
// with the env_read group switched off so that they are not refused: the
// environment is an allowlist, so the agent's keys are simply not there.
func TestEnvironmentDumpsShowNoSecrets(t *testing.T) {
	setEnvSecrets(t)
	// Unconfined: this is about the environment the tool builds, and
	// python3 may be a pyenv shim that the sandbox would not let run.
	tool := newBashTool(t, map[string]any{"allowGroups": []string{"env_read"}, "interpreters": "on", "sandbox": "off"})
	dumps := []string{
		"env",
		"set",
		"export -p",
		"echo \"$OPENAI_API_KEY|$ANTHROPIC_API_KEY|$AWS_SECRET_ACCESS_KEY|$GITHUB_TOKEN\"",
		"sh -c 'echo ${GITHUB_TOKEN:-unset}'",
		"cat /proc/self/environ | tr '\\0' '\\n'",
		"awk 'BEGIN { for (k in ENVIRON) print k \"=\" ENVIRON[k] }'",
	}
	if _, err := exec.LookPath("python3"); err == nil {
		dumps = append(dumps, "python3 -c 'import os; print(dict(os.environ))'")
	}
	if _, err := exec.LookPath("perl"); err == nil {
		dumps = append(dumps, "perl -e 'print join(\"\\n\", map { \"$_=$ENV{$_}\" } keys %ENV)'")
	}
	for _, cmd := range dumps {
		raw, _ := json.Marshal(map[string]any{"command": cmd})
		res, err := tool.Call(t.Context(), raw)
		if err != nil {
			t.Errorf("%q: %v", cmd, err)
			continue
		}
		for name, secret := range envSecrets {
			if strings.Contains(res.Text, secret) || strings.Contains(res.Text, name+"=") {
				t.Errorf("%q printed %s:\n%s", cmd, name, res.Text)
			}
		}
		// The dump itself worked: it shows what the environment does hold.
		if !strings.Contains(cmd, "echo") && !strings.Contains(res.Text, "PATH") {
			t.Errorf("%q printed no environment at all, so it proves nothing:\n%s", cmd, res.Text)
		}
	}
}

// TestSecretsInConfigEnvAreScrubbable: values given in config env reach the
// command, and are registered as secrets so the wrapper can redact them.
func TestSecretsInConfigEnvAreScrubbable(t *testing.T) {
	const token = "cfg-T3stOnlyToken-0123456789"
	sink := &secretList{}
	def, _ := tools.Builtins.Lookup("bash")
	raw, _ := json.Marshal(map[string]any{"workDir": t.TempDir(), "env": map[string]string{"DEPLOY_TOKEN": token}})
	tool, err := def.New(tools.BuildContext{Secrets: sink}, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer tool.(interface{ Close() error }).Close()
	if len(sink.values) != 1 || sink.values[0] != token {
		t.Fatalf("config env values were not registered as secrets: %q", sink.values)
	}
	for _, bad := range []string{"BASH_ENV", "ENV", "LD_PRELOAD", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES", "PROMPT_COMMAND", "BASH_FUNC_ls"} {
		raw, _ := json.Marshal(map[string]any{"workDir": t.TempDir(), "env": map[string]string{bad: "x"}})
		if _, err := def.New(tools.BuildContext{}, raw); !errors.Is(err, tools.ErrConfig) || !strings.Contains(err.Error(), bad) {
			t.Errorf("config env %s: want a config error naming it, got %v", bad, err)
		}
	}
}

type secretList struct{ values []string }

func (s *secretList) AddSecrets(v ...string) { s.values = append(s.values, v...) }
