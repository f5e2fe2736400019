package server

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/tools/limits"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// Governance is what the server enforces on every agent it runs, beyond
// each agent node's own configuration.
type Governance struct {
	// Policy is the server-wide tool policy (serve --policy); nil is none.
	Policy *policy.Policy
	// Audit receives the audit records of every agent (serve --audit);
	// nil writes none.
	Audit audit.Sink
}

// WithGovernance returns cfg with g registered for the chains built with
// it, together with one store of per-session limit counters for all of
// them, so that redeploying a chain does not reset its sessions' budgets.
// Call it before OpenStore. cfg.Udf is copied first.
func WithGovernance(cfg types.Config, g Governance) types.Config {
	cfg.Udf = maps.Clone(cfg.Udf)
	components.RegisterGovernance(&cfg, &components.Governance{Policy: g.Policy, Audit: g.Audit, Limits: limits.NewMemory()})
	return cfg
}

// LoadPolicy reads a server-wide tool policy given as a JSON object or as
// the path of a file holding one (serve --policy). An empty arg is no
// policy. A mistake (an unknown profile or group, an unknown field) is an
// error naming the field: the server does not start with a policy it
// cannot read.
func LoadPolicy(arg string) (*policy.Policy, error) {
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return nil, nil
	}
	raw, from := []byte(arg), "policy"
	if !strings.HasPrefix(arg, "{") {
		b, err := os.ReadFile(arg)
		if err != nil {
			return nil, err
		}
		raw, from = b, arg
	}
	p, err := policy.Parse(raw)
	var ce *policy.ConfigError
	switch {
	case errors.As(err, &ce) && ce.Path != "":
		return nil, fmt.Errorf("%s: %s: %s", from, ce.Path, ce.Msg)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", from, err)
	case p == nil:
		return nil, fmt.Errorf("%s: empty: give a policy object such as {\"profile\":\"readonly\"}, or leave --policy out", from)
	}
	return p, nil
}
