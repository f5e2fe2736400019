package components

// The agent node offers every built-in tool.
import _ "github.com/ruleagent/ruleagent/tools/builtin"
