package bash

import "github.com/ruleagent/ruleagent/tools/childenv"

// commandEnv builds the environment of every command: the allowlisted
// variables of this process, then the config's (see tools/childenv).
func commandEnv(extra map[string]string) []string { return childenv.Build(extra) }
