// Package builtin registers every built-in tool. Import it for its side
// effect:
//
//	import _ "github.com/ruleagent/ruleagent/tools/builtin"
package builtin

import (
	// Each package registers its tool in tools.Builtins from init.
	_ "github.com/ruleagent/ruleagent/tools/bash"
	_ "github.com/ruleagent/ruleagent/tools/edit"
	_ "github.com/ruleagent/ruleagent/tools/glob"
	_ "github.com/ruleagent/ruleagent/tools/grep"
	_ "github.com/ruleagent/ruleagent/tools/read"
	_ "github.com/ruleagent/ruleagent/tools/skill"
	_ "github.com/ruleagent/ruleagent/tools/web"
	_ "github.com/ruleagent/ruleagent/tools/write"
)
