package components_test

import (
	"context"
	"errors"
	"strings"

	"github.com/ruleagent/ruleagent/aspects"
)

// onlyAdminsRunCommands refuses the bash tool to callers whose message
// metadata does not say role=admin.
type onlyAdminsRunCommands struct{}

// Order places it among the aspects: lower runs first, and wraps outermost.
func (onlyAdminsRunCommands) Order() int { return 50 }

// PointCut decides, per call, where it applies: the ops team's chains.
func (onlyAdminsRunCommands) PointCut(_ context.Context, p *aspects.Point) bool {
	return strings.HasPrefix(p.ChainID, "ops-")
}

func (onlyAdminsRunCommands) BeforeToolCall(_ context.Context, p *aspects.Point, c *aspects.ToolCall) error {
	if c.Name == "bash" && p.Metadata["role"] != "admin" {
		return errors.New("only admins may run commands")
	}
	return nil
}

// Every agent node initialised from now on has it, before its own aspects.
func init() { aspects.Use(onlyAdminsRunCommands{}) }
