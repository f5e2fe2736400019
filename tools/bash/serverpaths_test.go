package bash

import (
	"errors"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// The policy explains early what the kernel refuses anyway: a command
// that writes the server's chains folder, or names its data directory, is
// refused with rule server_paths and the right way; reading a chain is
// not refused.
func TestPolicyExplainsServerPaths(t *testing.T) {
	p := testPolicy(t, Config{})
	p.setServerPaths([]tools.ServerPath{
		{Path: testWorkspace + "/chains", What: "the server's chains folder", Hint: "agents change chains with the save_rule_chain tool"},
		{Path: testWorkspace + "/data", What: "the server's data directory", Secret: true},
	})
	refused := []string{
		"echo '{}' > chains/evil.json",
		"echo x >> ./chains/agent.json",
		"cp src/evil.json chains/evil.json",
		"cp src/evil.json chains/",
		"mv chains/agent.json /tmp/",
		"rm -rf chains",
		"ln -s ../src/evil.json chains/evil.json",
		"touch chains/x.json",
		"cd src && cp evil.json ../chains/",
		"cat data/sessions.db",
		"ls data",
		"grep -r key " + testWorkspace + "/data",
		"tee chains/evil.json < src/evil.json",
	}
	for _, cmd := range refused {
		err := p.Check(cmd)
		if !errors.Is(err, tools.ErrServerPath) || !errors.Is(err, tools.ErrPolicyDenied) || !strings.Contains(err.Error(), `rule "server_paths"`) {
			t.Errorf("%q: want a server_paths refusal, got %v", cmd, err)
		}
	}
	err := p.Check("echo '{}' > chains/evil.json")
	if want := "chains/evil.json is in the server's chains folder, which agents may read but not change; agents change chains with the save_rule_chain tool"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("refusal %v does not say %q", err, want)
	}
	for _, cmd := range []string{"cat chains/agent.json", "cp chains/agent.json src/", "grep -r maxStep chains", "ls chains", "echo x > src/out.txt", "ls"} {
		if err := p.Check(cmd); err != nil {
			t.Errorf("%q: want allowed, got %v", cmd, err)
		}
	}
}
