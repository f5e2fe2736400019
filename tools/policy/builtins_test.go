package policy_test

import (
	"testing"

	"github.com/ruleagent/ruleagent/tools"
	_ "github.com/ruleagent/ruleagent/tools/builtin"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// The builtin groups and profiles name builtins by name: a renamed builtin
// must not silently fall out of its group.
func TestGroupsNameRegisteredBuiltins(t *testing.T) {
	for group, members := range policy.BuiltinGroupMembers() {
		for _, name := range members {
			if _, ok := tools.Builtins.Lookup(name); !ok {
				t.Errorf("%s names %q, which is not a builtin", group, name)
			}
		}
	}
	for _, profile := range policy.ProfileNames() {
		members, _, _ := policy.ProfileMembers(profile)
		for _, m := range members {
			if len(m) > 6 && m[:6] == "group:" {
				continue
			}
			if _, ok := tools.Builtins.Lookup(m); !ok {
				t.Errorf("profile %s names %q, which is not a builtin", profile, m)
			}
		}
	}
	// Every builtin is in some group, so that a profile can reach it.
	inGroup := map[string]bool{}
	for _, members := range policy.BuiltinGroupMembers() {
		for _, m := range members {
			inGroup[m] = true
		}
	}
	for _, name := range tools.Builtins.Names() {
		if !inGroup[name] {
			t.Errorf("builtin %s is in no group", name)
		}
	}
}
