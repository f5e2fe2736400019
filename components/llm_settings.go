package components

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/utils/str"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/demo"
)

// fillGlobals fills ${global.x} in LLM settings a chain left at their
// defaults: RuleGo fills the chain's own configuration only.
func fillGlobals(rc types.Config, fields ...*string) {
	env := map[string]any{"global": rc.Properties.Values()}
	for _, f := range fields {
		if strings.Contains(*f, "${global.") {
			*f = str.ExecuteTemplate(*f, env)
		}
	}
}

// llmMissing names the LLM settings that are unset (or still a template
// no global filled): runs fail saying to set them, loading does not. The
// demo model's name at any other server counts as unset: it is what the
// command line fills ${global.model} with when no LLM is configured, so a
// chain naming its own server there left the model to a global.
func llmMissing(url, model string) []string {
	var missing []string
	for _, f := range []struct{ name, v string }{{"url", strings.TrimSpace(url)}, {"model", strings.TrimSpace(model)}} {
		if f.v == "" || strings.Contains(f.v, "${") || f.name == "model" && f.v == demo.Model && !demo.IsURL(url) {
			missing = append(missing, f.name)
		}
	}
	return missing
}

// primaryEndpoint is the endpoint a node's url, key and model settings
// name, trimmed. An unset ${global.api_key} means "no key", as for local
// servers.
func primaryEndpoint(url, key, model string, params *agent.Params) agent.Endpoint {
	ep := agent.Endpoint{URL: strings.TrimSpace(url), Key: strings.TrimSpace(key), Model: strings.TrimSpace(model), Params: params}
	if strings.Contains(ep.Key, "${") {
		ep.Key = ""
	}
	return ep
}

// parseParams reads a node's params field into p (over what p already
// holds) and checks it here, at load: without an LLM configured, no client
// is made to check it.
func parseParams(raw map[string]any, p *agent.Params) error {
	if len(raw) == 0 {
		return nil
	}
	if err := strictJSON(raw, p); err != nil {
		return configerr.Prefix("params", err)
	}
	return p.Check()
}

// streamTimeouts reads a node's firstByteTimeout and idleTimeout into c.
func streamTimeouts(c *agent.LLMConfig, firstByte, idle string) error {
	var err error
	if c.FirstByteTimeout, err = duration("firstByteTimeout", firstByte); err != nil {
		return err
	}
	c.IdleTimeout, err = duration("idleTimeout", idle)
	return err
}

// WithoutLLM lists the ai/agent and ai/intent nodes of chain DSL whose
// url or model stays unset once globals fill them in (as at load): their
// runs fail saying what to set. A node that leaves url or model out
// defaults to ${global.llm_url} and ${global.model}.
func WithoutLLM(dsl []byte, globals map[string]string) []string {
	var def chainDef
	if json.Unmarshal(dsl, &def) != nil {
		return nil
	}
	env := placeholderEnv(globals, &def)
	var out []string
	for i, n := range def.Metadata.Nodes {
		if n.Type != AgentType && n.Type != IntentType {
			continue
		}
		url, model := "${global.llm_url}", "${global.model}"
		if v, ok := n.Configuration["url"].(string); ok {
			url = v
		}
		if v, ok := n.Configuration["model"].(string); ok {
			model = v
		}
		if len(llmMissing(str.ExecuteTemplate(url, env), str.ExecuteTemplate(model, env))) > 0 {
			id := n.ID
			if id == "" {
				id = fmt.Sprintf("node%d", i)
			}
			out = append(out, id)
		}
	}
	return out
}
