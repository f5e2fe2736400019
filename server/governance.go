package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/limits"
	"github.com/ruleagent/ruleagent/tools/policy"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// Governance is what the server enforces on every agent it runs, beyond
// each agent node's own configuration.
type Governance struct {
	// Policy is the server-wide tool policy (serve --policy); nil is none.
	Policy *policy.Policy
	// Audit receives the audit records of every agent (serve --audit);
	// nil writes none.
	Audit audit.Sink
	// Sandbox is the floor of the kernel confinement of the processes
	// agents' tools start (serve --sandbox, --allow-sandbox-off and the
	// policy file's "sandbox"): a chain asking for less is refused.
	Sandbox components.SandboxFloor
	// ServerPaths are the server's own files and folders (see
	// ServerPaths): no agent's tool call may change them, or read the
	// secret ones.
	ServerPaths []tools.ServerPath
}

// WithGovernance returns cfg with g registered for the chains built with
// it, together with one store of per-session limit counters for all of
// them, so that redeploying a chain does not reset its sessions' budgets.
// Call it before OpenStore. cfg.Udf is copied first.
func WithGovernance(cfg types.Config, g Governance) types.Config {
	cfg.Udf = maps.Clone(cfg.Udf)
	components.RegisterGovernance(&cfg, &components.Governance{Policy: g.Policy, Audit: g.Audit, Limits: limits.NewMemory(), Sandbox: g.Sandbox,
		ServerPaths: g.ServerPaths})
	return cfg
}

// LoadPolicy reads a server-wide tool policy given as a JSON object or as
// the path of a file holding one (serve --policy). An empty arg is no
// policy. A mistake (an unknown profile or group, an unknown field) is an
// error naming the field: the server does not start with a policy it
// cannot read. The file's "sandbox" object is read by LoadPolicyFile.
func LoadPolicy(arg string) (*policy.Policy, error) {
	f, err := LoadPolicyFile(arg)
	return f.Tools, err
}

// PolicyFile is what serve --policy gives: the tool policy binding every
// agent, and the policy's say on the sandbox floor.
type PolicyFile struct {
	// Tools is the server-wide tool policy; nil is none.
	Tools *policy.Policy
	// Sandbox is the file's "sandbox" object; nil when it has none.
	Sandbox *SandboxRule
}

// SandboxRule is the "sandbox" object of a policy file:
// {"mode": "required", "allowOff": false}.
type SandboxRule struct {
	// Mode is a floor: the operator's --sandbox may raise it, never lower
	// it.
	Mode string `json:"mode,omitempty"`
	// AllowOff, when set, decides whether chains may ask for less than the
	// floor: true allows it (as --allow-sandbox-off), false forbids it even
	// with --allow-sandbox-off (the server refuses to start with both).
	AllowOff *bool `json:"allowOff,omitempty"`
}

// LoadPolicyFile reads serve --policy: a JSON object, or the path of a
// file holding one, with the tool policy's fields and an optional
// "sandbox" object. An empty arg is no policy.
func LoadPolicyFile(arg string) (PolicyFile, error) {
	var f PolicyFile
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return f, nil
	}
	raw, from := []byte(arg), "policy"
	if !strings.HasPrefix(arg, "{") {
		b, err := os.ReadFile(arg)
		if err != nil {
			return f, err
		}
		raw, from = b, arg
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return f, fmt.Errorf("%s: %w", from, configerr.FromJSON(err, raw, &members))
	}
	if sb, ok := members["sandbox"]; ok {
		delete(members, "sandbox")
		f.Sandbox = &SandboxRule{}
		if err := configerr.Decode(sb, f.Sandbox); err != nil {
			return f, fmt.Errorf("%s: %w", from, configerr.Prefix("sandbox", err))
		}
		if f.Sandbox.Mode != "" {
			if _, err := sandbox.ParseMode(f.Sandbox.Mode); err != nil {
				return f, fmt.Errorf("%s: %w", from, configerr.Wrap("sandbox.mode", err))
			}
		}
		if len(members) == 0 {
			return f, nil
		}
		raw, _ = json.Marshal(members)
	}
	p, err := policy.Parse(raw)
	switch {
	case err != nil:
		return f, fmt.Errorf("%s: %w", from, err)
	case p == nil:
		return f, fmt.Errorf("%s: empty: give a policy object such as {\"profile\":\"readonly\"}, or leave --policy out", from)
	}
	f.Tools = p
	return f, nil
}

// Floor combines the operator's sandbox settings into the floor chains are
// checked against: the higher of --sandbox (best-effort when unset) and
// the policy file's mode; lowering it is allowed by --allow-sandbox-off or
// the file's allowOff: true, and forbidden whatever the flag says by the
// file's allowOff: false.
func Floor(flagMode string, allowOff bool, rule *SandboxRule) (components.SandboxFloor, error) {
	f := components.SandboxFloor{Mode: sandbox.BestEffort}
	if flagMode != "" {
		m, err := sandbox.ParseMode(flagMode)
		if err != nil {
			return f, fmt.Errorf("--sandbox: %w", err)
		}
		f.Mode = m
	}
	f.AllowLower = allowOff
	if rule == nil {
		return f, nil
	}
	if m := sandbox.Mode(rule.Mode); m != "" && components.ModeRank(m) > components.ModeRank(f.Mode) {
		f.Mode = m
	}
	if rule.AllowOff != nil {
		if allowOff && !*rule.AllowOff {
			return f, errors.New("--allow-sandbox-off: the policy file forbids it (\"sandbox\": {\"allowOff\": false})")
		}
		f.AllowLower = *rule.AllowOff
	}
	return f, nil
}
