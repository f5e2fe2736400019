package components

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/components/base"
	"github.com/rulego/rulego/utils/el"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// IntentType is the node type of the intent node.
const IntentType = "ai/intent"

// IntentOther is the relation of a message that matches no intent.
const IntentOther = "Other"

func init() {
	if err := rulego.Registry.Register(&IntentNode{}); err != nil {
		panic(fmt.Sprintf("ruleagent: registering %s: %v", IntentType, err))
	}
}

// IntentConfig is the configuration of an ai/intent node.
type IntentConfig struct {
	URL          string         `json:"url" label:"LLM base URL" desc:"OpenAI-compatible base URL. Usually ${global.llm_url}."`
	Key          string         `json:"key" label:"API key" desc:"Sent as a Bearer token. Usually ${global.api_key}."`
	Model        string         `json:"model" label:"Model" desc:"Model name. Usually ${global.model}."`
	Intents      []any          `json:"intents" label:"Intents" desc:"[{name, description}]: the message leaves by the relation named after the intent the model picks, or by Other when none fits. Names are letters, digits, '_' and '-'."`
	Instructions string         `json:"instructions" label:"Instructions" desc:"Extra guidance for the classifier, a RuleGo template (${metadata.x}, ${global.x})." component:"{\"type\":\"textarea\"}"`
	Input        string         `json:"input" label:"Input" desc:"What is classified, a RuleGo template over the message (${msg.text}); default the message data (the last user message of a chat request)."`
	Params       map[string]any `json:"params" label:"Model parameters" desc:"As ai/agent's params; temperature defaults to 0 here."`
	MaxRetries   int            `json:"maxRetries" label:"Max retries" desc:"Retries of a retryable LLM failure; 0 disables retries."`
	Timeout      string         `json:"timeout" label:"Timeout" desc:"Longest a classification may take, e.g. 30s."`
	// FirstByteTimeout and IdleTimeout bound a stalled answer, as for
	// ai/agent, within Timeout.
	FirstByteTimeout string `json:"firstByteTimeout" label:"First byte timeout" desc:"Longest silence before the answer starts: the attempt is abandoned and retried. 0 disables."`
	IdleTimeout      string `json:"idleTimeout" label:"Idle timeout" desc:"Longest silence once the answer has started. 0 disables."`
}

// Defaults of an intent node's stall limits: a one-word answer that has
// not started in 20 seconds is stalled, and leaves time for one more
// attempt within the default 60s timeout.
const (
	defaultIntentFirstByte = "20s"
	defaultIntentIdle      = "20s"
)

type intent struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// IntentNode is the ai/intent node: one LLM call picks the intent of a
// message, and the message leaves by the relation of that name, with
// metadata intent (and the usage), its data unchanged.
type IntentNode struct {
	Config IntentConfig

	intents []intent
	client  *agent.Client
	noLLM   error
	secrets *scrub.Scrubber
	system  el.Template
	input   el.Template
	timeout time.Duration
}

// New implements types.Node.
func (n *IntentNode) New() types.Node {
	return &IntentNode{Config: IntentConfig{URL: "${global.llm_url}", Key: "${global.api_key}", Model: "${global.model}",
		MaxRetries: 2, Timeout: "60s", FirstByteTimeout: defaultIntentFirstByte, IdleTimeout: defaultIntentIdle}}
}

// Type implements types.Node.
func (n *IntentNode) Type() string { return IntentType }

// Category groups the node in the editor's palette.
func (n *IntentNode) Category() string { return "ai" }

// Desc describes the node in the palette.
func (n *IntentNode) Desc() string {
	return "Routes a message by its intent: one LLM call picks one of the configured intents, and the message leaves by the relation of that name (Other when none fits)."
}

// Def implements types.ComponentDefGetter: the fixed relations; each
// intent adds its own, named after it.
func (n *IntentNode) Def() types.ComponentForm {
	rels := []string{IntentOther, types.Failure}
	return types.ComponentForm{Type: IntentType, Category: "ai", Label: "AI Intent", Desc: n.Desc(), RelationTypes: &rels}
}

// Init implements types.Node.
func (n *IntentNode) Init(rc types.Config, configuration types.Configuration) error {
	err := n.init(rc, configuration)
	reportInit(rc, configuration, err)
	return err
}

func (n *IntentNode) init(rc types.Config, configuration types.Configuration) error {
	if err := decodeNodeConfig(configuration, &n.Config); err != nil {
		return err
	}
	c := &n.Config
	fillGlobals(rc, &c.URL, &c.Key, &c.Model)
	p, err := c.parse()
	if err != nil {
		return err
	}
	n.intents, n.timeout, n.system, n.input = p.intents, p.timeout, p.system, p.input
	if missing := llmMissing(c.URL, c.Model); len(missing) > 0 {
		n.noLLM = &agent.NoLLMError{Missing: missing}
		return nil
	}
	ep := primaryEndpoint(c.URL, c.Key, c.Model, &p.params)
	n.secrets = scrub.New()
	n.secrets.AddSecrets(ep.Key)
	lc := agent.LLMConfig{Endpoints: []agent.Endpoint{ep}, MaxRetries: c.MaxRetries, RetryBackoff: 500 * time.Millisecond,
		FirstByteTimeout: p.stream.FirstByteTimeout, IdleTimeout: p.stream.IdleTimeout}
	n.client, err = agent.NewClient(lc)
	return err
}

// intentParsed is the checked form of an IntentConfig.
type intentParsed struct {
	intents       []intent
	timeout       time.Duration
	params        agent.Params
	system, input el.Template
	// stream holds the stream timeouts (firstByteTimeout, idleTimeout).
	stream agent.LLMConfig
}

// parse checks the configuration, as Init and ruleagent validate both do.
func (c *IntentConfig) parse() (*intentParsed, error) {
	p := &intentParsed{params: agent.Params{Temperature: new(float64)}}
	var err error
	if p.intents, err = parseIntents(c.Intents); err != nil {
		return nil, err
	}
	if p.timeout, err = duration("timeout", c.Timeout); err != nil {
		return nil, err
	}
	if c.MaxRetries < 0 {
		return nil, configerr.New("maxRetries", "must not be negative")
	}
	if err := streamTimeouts(&p.stream, c.FirstByteTimeout, c.IdleTimeout); err != nil {
		return nil, err
	}
	if err := parseParams(c.Params, &p.params); err != nil {
		return nil, err
	}
	if p.system, err = el.NewTemplate(intentPrompt(p.intents, c.Instructions)); err != nil {
		return nil, configerr.Prefix("instructions", err)
	}
	if p.input, err = el.NewTemplate(c.Input); err != nil {
		return nil, configerr.Prefix("input", err)
	}
	return p, nil
}

// checkIntentConfig checks an ai/intent node's configuration as Init does,
// for ruleagent validate.
func checkIntentConfig(configuration map[string]any) []Problem {
	c := (&IntentNode{}).New().(*IntentNode).Config
	if err := decodeNodeConfig(configuration, &c); err != nil {
		return problemsOf(err)
	}
	if _, err := c.parse(); err != nil {
		return problemsOf(err)
	}
	return nil
}

func parseIntents(list []any) ([]intent, error) {
	if len(list) == 0 {
		return nil, configerr.New("intents", "at least one is needed")
	}
	out := make([]intent, 0, len(list))
	seen := map[string]bool{strings.ToLower(IntentOther): true, strings.ToLower(types.Failure): true}
	for i, item := range list {
		var it intent
		if err := strictJSON(item, &it); err != nil {
			return nil, configerr.Prefix(fmt.Sprintf("intents[%d]", i), err)
		}
		if it.Name == "" || strings.IndexFunc(it.Name, notNameRune) >= 0 {
			return nil, configerr.New(fmt.Sprintf("intents[%d].name", i), "%q must be letters, digits, '_' and '-'", it.Name)
		}
		if seen[strings.ToLower(it.Name)] {
			return nil, configerr.New(fmt.Sprintf("intents[%d].name", i), "%q is taken (Other and Failure are the node's own)", it.Name)
		}
		seen[strings.ToLower(it.Name)] = true
		out = append(out, it)
	}
	return out, nil
}

// notNameRune reports a rune an intent's name cannot hold: names are
// letters, digits, '_' and '-'.
func notNameRune(r rune) bool {
	return !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
}

// intentPrompt is the classifier's system prompt.
func intentPrompt(intents []intent, instructions string) string {
	var b strings.Builder
	b.WriteString("Classify the user's message into exactly one of these intents. Answer with the intent's name only, nothing else.\n\n")
	for _, it := range intents {
		b.WriteString("- " + it.Name)
		if it.Description != "" {
			b.WriteString(": " + it.Description)
		}
		b.WriteByte('\n')
	}
	b.WriteString("- " + IntentOther + ": none of the above\n")
	if s := strings.TrimSpace(instructions); s != "" {
		b.WriteString("\n" + s + "\n")
	}
	return b.String()
}

// OnMsg implements types.Node.
func (n *IntentNode) OnMsg(ctx types.RuleContext, msg types.RuleMsg) {
	if n.noLLM != nil {
		failWith(ctx, msg, CodeNoLLM, n.noLLM)
		return
	}
	// RuleGo's variable map is built only for templates that read it.
	var env map[string]any
	if n.system.HasVar() || n.Config.Input != "" {
		env = base.NodeUtils.GetEvnAndMetadata(ctx, msg)
	}
	var text string
	if n.Config.Input != "" {
		text = n.input.ExecuteAsString(env)
	} else {
		text = lastUserText(msg.GetData())
	}
	goctx := nodeContext(ctx)
	// A classification is an LLM call of the run: the run's daily
	// budgets are checked before it, as before an agent's turn.
	// A refusal is an *agent.RunError naming the budget (errorLimit).
	if err := agent.LedgerFrom(goctx).Admit(goctx); err != nil {
		failRun(ctx, msg, err)
		return
	}
	if n.timeout > 0 {
		var cancel context.CancelFunc
		goctx, cancel = context.WithTimeout(goctx, n.timeout)
		defer cancel()
	}
	req := &agent.Request{Messages: []events.Message{{Role: events.RoleSystem, Content: n.system.ExecuteAsString(env)}, {Role: events.RoleUser, Content: text}}}
	// Streamed, though nobody sees it: a stalled provider is noticed
	// (firstByteTimeout, idleTimeout), which a whole answer cannot be.
	turn, err := n.client.Complete(goctx, req, true, agent.DiscardDeltas, nil)
	if err != nil {
		metrics.LLMRequests.WithLabelValues(n.client.Model(), "error").Inc()
		// A provider's 401 can quote the key.
		failWith(ctx, msg, agent.CodeLLM, errors.New(n.secrets.Scrub(err.Error())))
		return
	}
	countUsage(goctx, turn)
	name := n.match(turn.Content)
	m := msg.Metadata
	m.PutValue("intent", name)
	m.PutValue("model", turn.Model)
	m.PutValue("promptTokens", strconv.FormatInt(turn.Usage.PromptTokens, 10))
	m.PutValue("completionTokens", strconv.FormatInt(turn.Usage.CompletionTokens, 10))
	m.PutValue("totalTokens", strconv.FormatInt(turn.Usage.TotalTokens, 10))
	ctx.TellNext(msg, name)
}

// countUsage adds a classification's tokens to the run's usage (the
// ledger of whoever runs the chain: the server, or the agent whose tool
// the chain is) and to the metrics, as an agent's turn is counted.
func countUsage(ctx context.Context, t *agent.Turn) {
	agent.LedgerFrom(ctx).Add(t.Provider, t.Model, t.Usage)
	metrics.LLMRequests.WithLabelValues(t.Model, "ok").Inc()
	for _, k := range [...]struct {
		kind string
		n    int64
	}{{"prompt", t.Usage.PromptTokens}, {"completion", t.Usage.CompletionTokens}, {"cached", t.Usage.CachedTokens}, {"reasoning", t.Usage.ReasoningTokens}} {
		if k.n > 0 {
			metrics.Tokens.WithLabelValues(t.Model, k.kind).Add(float64(k.n))
		}
	}
}

// match finds the intent an answer names: the answer itself, trimmed of
// quotes and punctuation, compared without case; else the one intent
// whose name appears in it as a word; else Other.
func (n *IntentNode) match(answer string) string {
	a := strings.Trim(strings.TrimSpace(answer), "\"'`*.!:- \n")
	for _, it := range n.intents {
		if strings.EqualFold(a, it.Name) {
			return it.Name
		}
	}
	words := strings.FieldsFunc(strings.ToLower(answer), notNameRune)
	found := ""
	for _, it := range n.intents {
		for _, w := range words {
			if w == strings.ToLower(it.Name) {
				if found != "" && found != it.Name {
					return IntentOther
				}
				found = it.Name
			}
		}
	}
	if found == "" {
		return IntentOther
	}
	return found
}

// lastUserText is what a message's data asks: the last user message of a
// chat request, else the data itself (ParseInput's one user message).
func lastUserText(data string) string {
	msgs, err := agent.ParseInput([]byte(data))
	if err != nil {
		return data
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == events.RoleUser {
			return msgs[i].Content
		}
	}
	return data
}

// Destroy implements types.Node.
func (n *IntentNode) Destroy() {}
