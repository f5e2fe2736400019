package components

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/chaintool"
	"github.com/ruleagent/ruleagent/tools/policy"
	"github.com/rulego/rulego/utils/el"
)

// Config is the configuration of an ai/agent node. Its tags describe each
// field to RuleGo's GetComponentForms, and so to the editor.
type Config struct {
	URL   string `json:"url" label:"LLM base URL" desc:"OpenAI-compatible base URL, e.g. https://api.openai.com/v1. Usually ${global.llm_url}."`
	Key   string `json:"key" label:"API key" desc:"Sent as a Bearer token. Usually ${global.api_key}. May be empty for local servers."`
	Model string `json:"model" label:"Model" desc:"Model name. Usually ${global.model}."`
	// SystemPrompt is a RuleGo template evaluated for each message.
	SystemPrompt string `json:"systemPrompt" label:"System prompt" desc:"The agent's instructions. A RuleGo template: ${metadata.x}, ${vars.x}, ${global.x} are filled in for each message. A caller's system messages are kept after it; they cannot replace it." component:"{\"type\":\"textarea\"}"`
	// Messages are preset messages, each a RuleGo template over the
	// incoming message: the conversation of a message that is not one.
	Messages []any `json:"messages" label:"Preset messages" desc:"[{role: user|assistant|system, content}], each content a RuleGo template (${msg.field}, ${metadata.x}, ${vars.x}, ${global.x}): the conversation of an incoming message that is not one ({\"messages\": [...]} or {\"message\": ...} keep theirs), e.g. an HTTP endpoint's JSON event. Without it, such data is one user message as it is."`
	// Params holds temperature, topP, maxTokens, stop, presencePenalty,
	// frequencyPenalty, seed and extraFields.
	Params                 map[string]any `json:"params" label:"Model parameters" desc:"temperature (0 is sent), topP, maxTokens, stop, presencePenalty, frequencyPenalty, seed, extraFields (extra request body fields; dotted keys nest), responseFormat (json_object, text, or {name, schema, strict}: structured answers, which leave the node as JSON), reasoningEcho (none|toolCalls|all: earlier assistant messages whose reasoning goes back as reasoning_content). Unset parameters are not sent."`
	MaxStep                int            `json:"maxStep" label:"Max steps" desc:"Maximum LLM turns per run. When reached, one last turn without tools forces an answer, marked truncated."`
	MaxToolOutputLength    int            `json:"maxToolOutputLength" label:"Max tool output" desc:"Each tool result is cut to this many characters (keeping its head and tail)."`
	Tools                  []any          `json:"tools" label:"Tools" desc:"Tool objects: {type: builtin|rulechain|agent|mcp, name, description, targetId, parameters, timeout, config, bind}."`
	Failover               []any          `json:"failover" label:"Failover endpoints" desc:"Backup endpoints tried in order when the primary fails: [{url, key, model, params}]."`
	MaxRetries             int            `json:"maxRetries" label:"Max retries" desc:"Retries of a retryable LLM failure (429, 5xx, network) per endpoint; 0 disables retries."`
	RetryBackoff           string         `json:"retryBackoff" label:"Retry backoff" desc:"First retry delay, doubling each attempt with jitter (a Retry-After header takes precedence)."`
	CircuitCooldown        string         `json:"circuitCooldown" label:"Circuit cooldown" desc:"How long a failed endpoint is skipped (doubling while it keeps failing, up to 10m); 0 disables."`
	Timeout                string         `json:"timeout" label:"Run timeout" desc:"Maximum duration of one run, e.g. 10m."`
	FirstByteTimeout       string         `json:"firstByteTimeout" label:"First byte timeout" desc:"Longest silence of a streamed LLM answer before it starts (no byte, not even a keepalive): the attempt is abandoned and retried. 0 disables."`
	IdleTimeout            string         `json:"idleTimeout" label:"Idle timeout" desc:"Longest silence of a streamed LLM answer once it has started: the run fails (llm_error). 0 disables."`
	ParallelToolCalls      bool           `json:"parallelToolCalls" label:"Parallel tool calls" desc:"Run the tool calls of one turn concurrently."`
	RepeatLimit            int            `json:"repeatLimit" label:"Repeat limit" desc:"Refuse the Nth call of the same tool with the same arguments in a run (doom-loop guard); -1 disables."`
	MaxToolCalls           int            `json:"maxToolCalls" label:"Max tool calls" desc:"Maximum tool calls per run; 0 means no limit beyond maxStep."`
	MaxDepth               int            `json:"maxDepth" label:"Max nesting" desc:"How deep rulechain and agent tools may nest (A calls B calls C); a deeper call, or a cycle, is refused."`
	MaxConcurrentSubagents int            `json:"maxConcurrentSubagents" label:"Concurrent sub-agents" desc:"Sub-agents one run may have running at once; further calls wait for a free slot."`
	Workspace              string         `json:"workspace" label:"Workspace" desc:"Default working directory of file tools and bash (a tool's own workDir wins). Created at first use."`
	Aspects                []any          `json:"aspects" label:"Aspects" desc:"Aspects by name, e.g. [\"logging\"] or [{\"name\":\"logging\",\"config\":{\"level\":\"debug\"}}]."`
	Approval               map[string]any `json:"approval" label:"Approval" desc:"Tool calls that need a person before they run: {tools: [globs], commands: [bash command patterns], timeout: \"10m\"}. The run pauses with an AG-UI interrupt; no answer within the timeout means deny."`
	Session                map[string]any `json:"session" label:"Session" desc:"Conversation memory between runs: {scope: none|global|user|thread|user_thread, name, memory: full|final|tool_summaries, toolResultLimit, maxHistoryMessages, maxHistoryTokens, compaction: {keepTurns, prompt}, ttl, allowedModels}. See README, Sessions and memory."`
	Policy                 map[string]any `json:"policy" label:"Tool policy" desc:"Which tools the agent may use: {profile: full|coding|readonly|minimal, allow, deny, alsoAllow, subagentDeny}; entries are tool names, globs (web_*) or groups (group:fs, group:runtime, group:web, group:mcp, group:mcp:<server>, group:agents, group:chains). Deny is final; an empty allow list allows nothing. The server's --policy applies too."`
	Limits                 map[string]any `json:"limits" label:"Limits and budgets" desc:"{toolCallsPerHour (per session), tokensPerRun, tokensPerSession, sessionIdle (how long a session's token count is kept, default 24h), concurrentRuns}; 0 or absent means no limit. A session is the caller's threadId, else its userId."`
}

// defaultConfig holds the documented defaults.
func defaultConfig() Config {
	return Config{
		URL:                    "${global.llm_url}",
		Key:                    "${global.api_key}",
		Model:                  "${global.model}",
		MaxStep:                agent.DefaultMaxStep,
		MaxToolOutputLength:    agent.DefaultMaxToolOutputLength,
		MaxRetries:             2,
		RetryBackoff:           "500ms",
		CircuitCooldown:        "60s",
		Timeout:                "10m",
		FirstByteTimeout:       agent.DefaultFirstByteTimeout.String(),
		IdleTimeout:            agent.DefaultIdleTimeout.String(),
		ParallelToolCalls:      true,
		RepeatLimit:            agent.DefaultRepeatLimit,
		MaxDepth:               chaintool.DefaultMaxDepth,
		MaxConcurrentSubagents: 4,
		Workspace:              "workspace",
	}
}

// readConfig reads an ai/agent node's configuration over the defaults, as
// Init and ruleagent validate both do.
func readConfig(configuration map[string]any) (Config, error) {
	c := defaultConfig()
	err := decodeNodeConfig(configuration, &c)
	return c, err
}

// ruleGoKey reports whether RuleGo, not the chain, put key into a node's
// configuration.
func ruleGoKey(k string) bool { return strings.HasPrefix(k, "$") || k == "vars" || k == "secrets" }

// parsed is the checked form of a Config.
type parsed struct {
	llm        agent.LLMConfig
	llmMissing []string
	specs      []tools.Spec
	timeout    time.Duration
	aspectList []aspects.Aspect
	prompt     el.Template
	presets    []presetMessage
	approval   *tools.ApprovalPolicy
	session    *sessionSpec
	policy     *policy.Policy
	limits     agent.Limits
}

func (c *Config) parse() (*parsed, error) {
	p := &parsed{}
	if err := unresolved(c); err != nil {
		return nil, err
	}
	var err error
	if p.prompt, err = el.NewTemplate(c.SystemPrompt); err != nil {
		return nil, configerr.Prefix("systemPrompt", err)
	}
	if p.presets, err = parsePresets(c.Messages); err != nil {
		return nil, err
	}
	var params agent.Params
	if err := parseParams(c.Params, &params); err != nil {
		return nil, err
	}
	primary := primaryEndpoint(c.URL, c.Key, c.Model, &params)
	p.llmMissing = llmMissing(primary.URL, primary.Model)
	p.llm.Endpoints = []agent.Endpoint{primary}
	for i, f := range c.Failover {
		var ep agent.Endpoint
		if err := strictJSON(f, &ep); err != nil {
			return nil, configerr.Prefix(fmt.Sprintf("failover[%d]", i), err)
		}
		p.llm.Endpoints = append(p.llm.Endpoints, ep)
	}
	p.llm.MaxRetries = c.MaxRetries
	if p.llm.RetryBackoff, err = duration("retryBackoff", c.RetryBackoff); err != nil {
		return nil, err
	}
	if p.llm.CircuitCooldown, err = duration("circuitCooldown", c.CircuitCooldown); err != nil {
		return nil, err
	}
	if p.timeout, err = duration("timeout", c.Timeout); err != nil {
		return nil, err
	}
	if err := streamTimeouts(&p.llm, c.FirstByteTimeout, c.IdleTimeout); err != nil {
		return nil, err
	}
	if len(p.llmMissing) == 0 {
		if err := p.llm.Validate(); err != nil {
			return nil, err
		}
	}
	switch {
	case c.MaxStep < 1:
		return nil, configerr.New("maxStep", "must be at least 1")
	case c.MaxToolOutputLength < 1:
		return nil, configerr.New("maxToolOutputLength", "must be at least 1")
	case c.MaxRetries < 0:
		return nil, configerr.New("maxRetries", "must not be negative")
	case c.RepeatLimit < -1 || c.RepeatLimit == 1:
		return nil, configerr.New("repeatLimit", "must be -1 (off) or at least 2")
	case c.MaxToolCalls < 0:
		return nil, configerr.New("maxToolCalls", "must not be negative")
	case c.MaxDepth < 1:
		return nil, configerr.New("maxDepth", "must be at least 1")
	case c.MaxConcurrentSubagents < 1:
		return nil, configerr.New("maxConcurrentSubagents", "must be at least 1")
	}
	if len(c.Tools) > 0 {
		raw, _ := json.Marshal(c.Tools)
		if p.specs, err = tools.ParseSpecs(raw); err != nil {
			return nil, err
		}
	}
	if p.aspectList, err = parseAspects(c.Aspects); err != nil {
		return nil, err
	}
	if len(c.Approval) > 0 {
		p.approval = &tools.ApprovalPolicy{}
		if err := strictJSON(c.Approval, p.approval); err != nil {
			return nil, configerr.Prefix("approval", err)
		}
		for i, g := range p.approval.Tools {
			if _, err := path.Match(g, ""); err != nil {
				return nil, configerr.New(fmt.Sprintf("approval.tools[%d]", i), "%q is not a valid glob", g)
			}
		}
	}
	if p.session, err = parseSession(c.Session); err != nil {
		return nil, err
	}
	if err := p.parseGovernance(c); err != nil {
		return nil, err
	}
	return p, nil
}

func parseAspects(list []any) ([]aspects.Aspect, error) {
	out := aspects.Global()
	for i, item := range list {
		var name string
		var cfg json.RawMessage
		switch v := item.(type) {
		case string:
			name = v
		case map[string]any:
			var a struct {
				Name   string          `json:"name"`
				Config json.RawMessage `json:"config"`
			}
			if err := strictJSON(v, &a); err != nil {
				return nil, configerr.Prefix(fmt.Sprintf("aspects[%d]", i), err)
			}
			name, cfg = a.Name, a.Config
		default:
			return nil, configerr.New(fmt.Sprintf("aspects[%d]", i), "want a name or {name, config}")
		}
		a, err := aspects.New(name, cfg)
		if err != nil {
			return nil, configerr.Prefix(fmt.Sprintf("aspects[%d]", i), err)
		}
		out = append(out, a)
	}
	return out, nil
}

func duration(field, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, configerr.New(field, "%q is not a duration such as \"30s\" or \"10m\"", s)
	}
	return d, nil
}

// strictJSON re-encodes v and decodes it into dst, refusing unknown fields.
// Errors are *configerr.Error relative to v.
func strictJSON(v any, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return configerr.Wrap("", err)
	}
	return configerr.Decode(b, dst)
}
