package components

import (
	"encoding/json"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/limits"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// Governance is what a host (the server) enforces on every agent node it
// runs, beyond each node's own configuration.
type Governance struct {
	// Policy is the server-wide tool policy: every node's tools must be
	// allowed by it too, and its subagentDeny binds every agent run as a
	// tool. Nil is none.
	Policy *policy.Policy
	// Audit receives the audit records of every node; nil writes none.
	Audit audit.Sink
	// Limits keeps the per-session counters of every node, so that they
	// survive a chain's redeployment; nil gives each node its own.
	Limits limits.Store
	// Sandbox is the floor of the kernel confinement of the processes
	// tools start: a node asking for less fails to load.
	Sandbox SandboxFloor
	// ServerPaths are the host's own files and folders (its chains folder,
	// data directory, ...): no tool call may change them, or read the
	// secret ones, whatever the node's configuration.
	ServerPaths []tools.ServerPath
}

// GovernanceUDF is the key under which a host registers its Governance in
// the chains' RuleGo configuration (types.Config.Udf), as a types.Script of
// type GovernanceUDFType: RuleGo's JavaScript engine copies every other Udf
// value into each new VM, which would hand chain scripts the audit log.
const GovernanceUDF = "ruleagent.governance"

// GovernanceUDFType is the types.Script type of the GovernanceUDF value.
const GovernanceUDFType = "ruleagent.governance"

// RegisterGovernance registers g in cfg for the chains built with cfg.
// cfg.Udf is created if nil.
func RegisterGovernance(cfg *types.Config, g *Governance) {
	if cfg.Udf == nil {
		cfg.Udf = map[string]any{}
	}
	cfg.Udf[GovernanceUDF] = types.Script{Type: GovernanceUDFType, Content: g}
}

// GovernanceOf returns the Governance registered in rc, or an empty one.
// Hosts read it to check chains as their nodes will (the sandbox floor).
func GovernanceOf(rc types.Config) *Governance {
	if sc, ok := rc.Udf[GovernanceUDF].(types.Script); ok && sc.Type == GovernanceUDFType {
		if g, ok := sc.Content.(*Governance); ok && g != nil {
			return g
		}
	}
	return &Governance{}
}

// limitsConfig is the node's limits field.
type limitsConfig struct {
	ToolCallsPerHour int    `json:"toolCallsPerHour"`
	TokensPerRun     int64  `json:"tokensPerRun"`
	TokensPerSession int64  `json:"tokensPerSession"`
	SessionIdle      string `json:"sessionIdle"`
	ConcurrentRuns   int    `json:"concurrentRuns"`
}

// parseGovernance reads the node's policy and limits fields.
func (p *parsed) parseGovernance(c *Config) error {
	if len(c.Policy) > 0 {
		raw, err := json.Marshal(c.Policy)
		if err != nil {
			return configerr.Prefix("policy", err)
		}
		if p.policy, err = policy.Parse(raw); err != nil {
			return configerr.Prefix("policy", err)
		}
	}
	var lc limitsConfig
	if len(c.Limits) > 0 {
		if err := strictJSON(c.Limits, &lc); err != nil {
			return configerr.Prefix("limits", err)
		}
	}
	switch {
	case lc.ToolCallsPerHour < 0:
		return configerr.New("limits.toolCallsPerHour", "must not be negative")
	case lc.TokensPerRun < 0:
		return configerr.New("limits.tokensPerRun", "must not be negative")
	case lc.TokensPerSession < 0:
		return configerr.New("limits.tokensPerSession", "must not be negative")
	case lc.ConcurrentRuns < 0:
		return configerr.New("limits.concurrentRuns", "must not be negative")
	}
	idle, err := duration("limits.sessionIdle", lc.SessionIdle)
	if err != nil {
		return err
	}
	p.limits = agent.Limits{ToolCallsPerHour: lc.ToolCallsPerHour, TokensPerRun: lc.TokensPerRun, TokensPerSession: lc.TokensPerSession,
		SessionIdle: idle, ConcurrentRuns: lc.ConcurrentRuns}
	return nil
}
