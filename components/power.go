package components

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/tools"
	mcptool "github.com/ruleagent/ruleagent/tools/mcp"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// A chain an agent saves (save_rule_chain through the self MCP server,
// during its run) may hold no more power than the agent that saved it, nor
// than any agent that run is within. Power is what a chain can do beyond
// computing: the tools its agents have and how each is configured, the
// LLM endpoints they talk to (and the keys sent there), the chains it
// calls, the server's settings it reads, and RuleGo components that reach
// outside the process. See savedBy for the rules.

// Saver is an agent whose run saves a chain.
type Saver struct {
	ChainID, NodeID string
	// Config is the agent node's configuration as deployed: its DSL's,
	// placeholders unfilled.
	Config map[string]any
}

// SaveCheck is what decides about a chain an agent saves, beside the
// chain.
type SaveCheck struct {
	// Savers are the agents whose run saves the chain, innermost first.
	Savers []Saver
	// Restrictions are the tool policies of that run (the saver's, the
	// server's and those inherited): a tool they deny the saver is denied
	// to the saved chain.
	Restrictions *policy.Restrictions
	// Exposed reports whether a chain is offered as a tool of the self MCP
	// server, which a saver with an unfiltered self entry may call.
	Exposed func(id string) bool
}

// inProcess are the RuleGo components a chain an agent saves may use:
// they compute over the message and route it, and reach nothing outside
// the process. flow, ref, for and while call chains, which the saver must
// be able to call itself.
var inProcess = []string{"jsFilter", "exprFilter", "fieldFilter", "groupFilter", "jsSwitch", "msgTypeSwitch", "switch", "inclusive",
	"jsTransform", "exprTransform", "metadataTransform", "text/template", "log", "delay", "fetchNodeOutput", "fork", "join",
	"groupAction", "for", "while", "break", "end", "comment", "flow", "ref", AgentType, IntentType}

// SavedBy checks chain DSL an agent saves against c. It returns the
// problems, each an error at its JSON path; none when the chain holds no
// more power than every saver.
func SavedBy(dsl []byte, c SaveCheck) []Problem {
	if len(c.Savers) == 0 {
		return nil
	}
	var doc map[string]any
	if json.Unmarshal(dsl, &doc) != nil {
		return nil // reported by Validate
	}
	var ps []Problem
	add := func(path, format string, args ...any) {
		ps = append(ps, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	savers := make([]*saverPower, 0, len(c.Savers))
	for _, s := range c.Savers {
		sp, err := powerOf(s)
		if err != nil {
			add("", "the saving agent %s/%s cannot be read: %v", s.ChainID, s.NodeID, err)
			return ps
		}
		savers = append(savers, sp)
	}
	who := savers[0].name()
	rc, _ := member(doc, "ruleChain").(map[string]any)
	if cfg, ok := member(rc, "configuration").(map[string]any); ok && member(cfg, "secrets") != nil {
		add("ruleChain.configuration.secrets", "a chain saved by an agent cannot hold secrets")
	}
	md, _ := member(doc, "metadata").(map[string]any)
	if eps, ok := member(md, "endpoints").([]any); ok && len(eps) > 0 {
		add("metadata.endpoints", "a chain saved by an agent cannot declare endpoints (they listen and start runs); deploy it through the chains folder")
	}
	nodes, _ := member(md, "nodes").([]any)
	for i, item := range nodes {
		node, _ := item.(map[string]any)
		p := fmt.Sprintf("metadata.nodes[%d]", i)
		typ, _ := member(node, "type").(string)
		cfg, _ := member(node, "configuration").(map[string]any)
		if !slices.Contains(inProcess, typ) {
			add(p+".type", "a chain saved by an agent (%s) cannot use %q: it reaches outside the process, which no agent tool grants", who, typ)
			continue
		}
		for _, pr := range c.node(typ, cfg, savers) {
			add(configerr.Join(p+".configuration", pr.Path), "%s", pr.Msg)
		}
	}
	return ps
}

// node checks one node's configuration.
func (c SaveCheck) node(typ string, cfg map[string]any, savers []*saverPower) []Problem {
	var ps []Problem
	add := func(path, format string, args ...any) {
		ps = append(ps, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	llm := map[string]bool{}
	if typ == AgentType || typ == IntentType {
		llm = map[string]bool{"url": true, "key": true, "model": true, "failover": true}
		if msg := endpointsWithin(cfg, savers); msg != "" {
			add("url", "%s", msg)
		}
	}
	for _, k := range sortedKeys(cfg) {
		if llm[k] || ruleGoKey(k) || (typ == AgentType && k == "workspace" && sameWorkspace(cfg, savers)) {
			continue
		}
		if path, v, ok := globalIn(cfg[k]); ok {
			add(configerr.Join(k, path), "a chain saved by an agent cannot read the server's setting %s", v)
		}
	}
	switch typ {
	case "flow":
		if t, ok := member(cfg, "targetId").(string); ok {
			c.target("targetId", t, savers, add)
		}
	case "ref":
		if t, ok := member(cfg, "targetId").(string); ok {
			if chain, _, found := strings.Cut(t, ":"); found {
				c.target("targetId", chain, savers, add)
			}
		}
	case "for", "while":
		if d, ok := member(cfg, "do").(string); ok {
			if chain, found := strings.CutPrefix(d, "chain:"); found {
				c.target("do", chain, savers, add)
			}
		}
	case AgentType:
		ps = append(ps, c.agentTools(cfg, savers)...)
	}
	return ps
}

// agentTools checks an ai/agent node's workspace and tools.
func (c SaveCheck) agentTools(cfg map[string]any, savers []*saverPower) []Problem {
	var ps []Problem
	raw, _ := json.Marshal(cfg["tools"])
	specs, err := tools.ParseSpecs(raw)
	if err != nil {
		return nil // reported by Validate
	}
	ws := workspaceOf(cfg)
	for i, s := range specs {
		path := fmt.Sprintf("tools[%d]", i)
		add := func(sub, format string, args ...any) {
			ps = append(ps, Problem{Path: configerr.Join(path, sub), Msg: fmt.Sprintf(format, args...)})
		}
		if d := c.Restrictions.Decide(policyTool(s)); !d.Allowed() {
			add("", "the saving agent may not use this tool: %v", d.Err())
			continue
		}
		switch s.Type {
		case tools.TypeRuleChain, tools.TypeAgent:
			c.target("targetId", s.TargetID, savers, add)
		case tools.TypeBuiltin, tools.TypeMCP:
			for _, sp := range savers {
				if s.Type == tools.TypeBuiltin && ws != sp.workspace {
					add("", "the saving agent %s works in %q, not %q: a chain it saves keeps its workspace", sp.name(), sp.workspace, ws)
					break
				}
				if why := sp.covers(s); why != "" {
					add("", "%s", why)
					break
				}
			}
		}
	}
	return ps
}

// target checks a call to chain id.
func (c SaveCheck) target(path, id string, savers []*saverPower, add func(string, string, ...any)) {
	for _, sp := range savers {
		if !sp.calls(id, c.Exposed) {
			add(path, "the saving agent %s cannot call chain %q itself (no rulechain or agent tool for it, nor an unfiltered self MCP entry exposing it)", sp.name(), id)
			return
		}
	}
}

// policyTool is how a tool policy sees a tools entry before it is built.
func policyTool(s tools.Spec) policy.Tool {
	switch s.Type {
	case tools.TypeMCP:
		prefix, _, _ := mcptool.Describe(s)
		return policy.Tool{Name: prefix + "__", Kind: s.Type, Server: prefix}
	case tools.TypeAgent:
		if s.Name == "" {
			return policy.Tool{Name: s.TargetID, Kind: s.Type}
		}
	}
	return policy.Tool{Name: s.Name, Kind: s.Type}
}

// endpointsWithin checks that every LLM endpoint of a saved ai/agent or
// ai/intent node (url and key, with its failover) is one each saver talks
// to: a saved chain may not send its conversations, or the server's keys,
// anywhere else. The model may differ.
func endpointsWithin(cfg map[string]any, savers []*saverPower) string {
	for _, ep := range endpointsOf(cfg) {
		for _, sp := range savers {
			if !slices.Contains(sp.endpoints, ep) {
				return fmt.Sprintf("the saving agent %s does not talk to the LLM endpoint %s (with this key); a chain it saves may use only its own endpoints", sp.name(), ep.url)
			}
		}
	}
	return ""
}

type llmEndpoint struct{ url, key string }

// endpointsOf lists a node's LLM endpoints as configured (placeholders
// unfilled): url and key, defaulting to ${global.llm_url} and
// ${global.api_key}, then each failover entry.
func endpointsOf(cfg map[string]any) []llmEndpoint {
	get := func(m map[string]any, k, def string) string {
		if v, ok := m[k].(string); ok {
			return strings.TrimSpace(v)
		}
		return def
	}
	out := []llmEndpoint{{get(cfg, "url", "${global.llm_url}"), get(cfg, "key", "${global.api_key}")}}
	list, _ := cfg["failover"].([]any)
	for _, f := range list {
		if m, ok := f.(map[string]any); ok {
			out = append(out, llmEndpoint{get(m, "url", ""), get(m, "key", "")})
		}
	}
	return out
}

// workspaceOf is an ai/agent node's workspace as configured.
func workspaceOf(cfg map[string]any) string {
	if v, ok := cfg["workspace"].(string); ok {
		return v
	}
	return defaultConfig().Workspace
}

// sameWorkspace reports whether an ai/agent node works where every saver
// does: then its workspace setting reads no more than theirs.
func sameWorkspace(cfg map[string]any, savers []*saverPower) bool {
	for _, sp := range savers {
		if workspaceOf(cfg) != sp.workspace {
			return false
		}
	}
	return true
}

// globalIn finds a ${global.x} in a configuration value, with its path.
func globalIn(v any) (string, string, bool) {
	switch x := v.(type) {
	case string:
		if i := strings.Index(x, "${global."); i >= 0 {
			end := strings.IndexByte(x[i:], '}')
			if end < 0 {
				return "", x[i:], true
			}
			return "", x[i : i+end+1], true
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if path, g, ok := globalIn(x[k]); ok {
				return configerr.Join(k, path), g, true
			}
		}
	case []any:
		for i, e := range x {
			if path, g, ok := globalIn(e); ok {
				return configerr.Join(fmt.Sprintf("[%d]", i), path), g, true
			}
		}
	}
	return "", "", false
}
