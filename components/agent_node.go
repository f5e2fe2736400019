// Package components holds ruleagent's RuleGo nodes and the RuleGo glue.
// A blank import registers them:
//
//	import _ "github.com/ruleagent/ruleagent/components"
package components

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/components/base"
	"github.com/rulego/rulego/engine"
	"github.com/rulego/rulego/utils/el"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/chaintool"
	mcptool "github.com/ruleagent/ruleagent/tools/mcp"
	"github.com/ruleagent/ruleagent/tools/policy"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// AgentType is the node type of the agent node.
const AgentType = "ai/agent"

func init() {
	if err := rulego.Registry.Register(&AgentNode{}); err != nil {
		panic(fmt.Sprintf("ruleagent: registering %s: %v", AgentType, err))
	}
	// Every agent counts its runs, LLM requests and tokens.
	aspects.Use(&aspects.Metrics{})
}

// AgentNode is the ai/agent node: a ReAct agent that answers each message.
type AgentNode struct {
	Config Config

	agent   *agent.Agent
	tools   *tools.Set
	prompt  el.Template
	presets []presetMessage
	// jsonAnswers: params.responseFormat asks for JSON, so a valid JSON
	// answer leaves the node as JSON data.
	jsonAnswers bool
	scrubber    *scrub.Scrubber
	noLLM       error
	chains      *chaintool.Provider
	chainID     string
	nodeID      string
	nodeName    string
	vars        map[string]string
	globals     map[string]string
	session     *agentSession
	// gov is the host's governance; policies are the server's and the
	// node's tool policies, the restrictions of a run nobody above limits.
	gov      *Governance
	policy   *policy.Policy
	policies *policy.Restrictions

	streamOnce sync.Once
	streamConn bool
}

// New implements types.Node.
func (n *AgentNode) New() types.Node { return &AgentNode{Config: defaultConfig()} }

// Type implements types.Node.
func (n *AgentNode) Type() string { return AgentType }

// Category groups the node in the editor's palette.
func (n *AgentNode) Category() string { return "ai" }

// Desc describes the node in the palette.
func (n *AgentNode) Desc() string {
	return "A ReAct agent: answers each message with an OpenAI-compatible LLM, calling tools (builtin, rule chains, sub-agents, MCP) as it needs, and streams its run as AG-UI events."
}

// Def completes the component form.
func (n *AgentNode) Def() types.ComponentForm {
	rels := []string{types.Success, types.Failure, types.Stream}
	return types.ComponentForm{Type: AgentType, Category: "ai", Label: "AI Agent", Desc: n.Desc(), RelationTypes: &rels}
}

// Init implements types.Node. Invalid configuration fails here, naming the
// field. A missing LLM does not: the chain loads, and runs fail with an
// error saying what to set.
func (n *AgentNode) Init(rc types.Config, configuration types.Configuration) error {
	err := n.init(rc, configuration)
	reportInit(rc, configuration, err)
	return err
}

func (n *AgentNode) init(rc types.Config, configuration types.Configuration) error {
	c, err := readConfig(configuration)
	if err != nil {
		return err
	}
	n.Config = c
	// RuleGo fills ${global.x} in the chain's own configuration only; the
	// defaults of fields the chain leaves out are filled here the same way.
	fillGlobals(rc, &n.Config.URL, &n.Config.Key, &n.Config.Model)
	p, err := n.Config.parse()
	if err != nil {
		return err
	}
	n.prompt = p.prompt
	n.presets = p.presets
	n.jsonAnswers = p.llm.Endpoints[0].Params.JSONAnswers()
	self := base.NodeUtils.GetSelfDefinition(configuration)
	n.nodeID, n.nodeName = self.Id, self.Name
	if cc := base.NodeUtils.GetChainCtx(configuration); cc != nil && cc.Definition() != nil {
		n.chainID = cc.Definition().RuleChain.ID
	}
	n.vars = stringMap(base.NodeUtils.GetVars(configuration))
	n.globals = rc.Properties.Values()
	n.gov = GovernanceOf(rc)
	if err := n.gov.Sandbox.check(n.nodeID, p.specs); err != nil {
		return err
	}
	n.policy = p.policy
	n.policies = (*policy.Restrictions)(nil).With(policy.LayerServer, n.gov.Policy).With(policy.NodeLayer(n.chainID, n.nodeID), n.policy)
	if p.limits.Store == nil {
		p.limits.Store = n.gov.Limits
	}

	n.scrubber = scrub.New()
	for _, ep := range p.llm.Endpoints {
		n.scrubber.AddSecrets(ep.Key)
	}
	var pool types.RuleEnginePool = engine.DefaultPool
	if cc := base.NodeUtils.GetChainCtx(configuration); cc != nil && cc.GetRuleEnginePool() != nil {
		pool = cc.GetRuleEnginePool()
	}
	n.chains = chaintool.NewProvider(chaintool.Options{Invoker: &chainInvoker{pool: pool}, ChainID: n.chainID, MaxDepth: n.Config.MaxDepth})
	providers := map[string]tools.Provider{tools.TypeRuleChain: n.chains, tools.TypeAgent: n.chains,
		tools.TypeMCP: mcptool.NewProvider(mcptool.Options{Self: selfMCP(rc)})}
	n.tools, err = tools.Build(context.Background(), p.specs, tools.BuildEnv{WorkDir: n.Config.Workspace, Secrets: n.scrubber, Providers: providers,
		ServerPaths: n.gov.ServerPaths})
	if err != nil {
		return err
	}
	am, err := aspects.NewManager(p.aspectList...)
	if err != nil {
		n.tools.Close()
		return configerr.Prefix("aspects", err)
	}
	if len(p.llmMissing) > 0 {
		n.noLLM = &agent.NoLLMError{Missing: p.llmMissing}
	}
	if err := n.initSession(rc, p.session, p.llm); err != nil {
		n.tools.Close()
		return err
	}
	if n.noLLM != nil {
		return nil
	}
	client, err := agent.NewClient(p.llm)
	if err == nil {
		n.agent, err = agent.New(agent.Config{LLM: client, Tools: n.tools, Aspects: am, MaxStep: n.Config.MaxStep,
			MaxToolOutputLength: n.Config.MaxToolOutputLength, ParallelToolCalls: n.Config.ParallelToolCalls,
			RepeatLimit: n.Config.RepeatLimit, MaxToolCalls: n.Config.MaxToolCalls, Timeout: p.timeout,
			MaxConcurrentSubagents: n.Config.MaxConcurrentSubagents, Approval: p.approval, Limits: p.limits, Audit: n.gov.Audit})
	}
	if err != nil {
		n.tools.Close()
		return err
	}
	return nil
}

// OnMsg implements types.Node. It runs the agent on the message and ends
// with exactly one terminal Tell: Success with the answer, or Failure with a
// typed error (metadata errorCode says which).
func (n *AgentNode) OnMsg(ctx types.RuleContext, msg types.RuleMsg) {
	t := &terminal{ctx: ctx}
	defer func() {
		if v := recover(); v != nil {
			t.failure(msg, &agent.RunError{Code: agent.CodePanic, Err: fmt.Errorf("internal error: %v", v)})
		}
	}()
	if n.noLLM != nil {
		t.failure(msg, &agent.RunError{Code: CodeNoLLM, Err: n.noLLM})
		return
	}
	// Sub-agent tools take their name, description and schema from their
	// target chains, which may have been (re)deployed since the last run.
	n.chains.RefreshAgents()
	var env map[string]any
	envOf := func() map[string]any {
		if env == nil {
			env = base.NodeUtils.GetEvnAndMetadata(ctx, msg)
		}
		return env
	}
	messages, err := n.input(msg, envOf)
	if err != nil {
		t.failure(msg, &agent.RunError{Code: CodeBadInput, Err: err})
		return
	}
	md := msg.Metadata.Values()
	goctx := tools.WithAgent(nodeContext(ctx), tools.AgentRef{ChainID: n.chainID, NodeID: n.nodeID})
	var sinks []events.Sink
	if s := events.SinkFrom(goctx); s != nil {
		sinks = append(sinks, s)
	}
	if n.hasStreamConnection(ctx) || (len(sinks) == 0 && md["stream"] == "true") {
		sinks = append(sinks, &ruleStreamSink{ctx: ctx, base: msg})
	}
	sink := events.Discard
	switch len(sinks) {
	case 1:
		sink = sinks[0]
	case 2:
		sink = events.Tee(sinks...)
	}
	in := agent.Input{
		Messages:     messages,
		SystemPrompt: n.systemPrompt(envOf),
		ThreadID:     md["threadId"],
		RunID:        md["runId"],
		ParentRunID:  md["parentRunId"],
		Point: aspects.Point{ChainID: n.chainID, NodeID: n.nodeID, NodeName: n.nodeName,
			UserID: md["userId"], Metadata: md},
		Stream:   len(sinks) > 0,
		Bind:     tools.BindValues{Metadata: md, Vars: n.vars, Global: n.globals},
		Scrubber: n.scrubber.Child(),
		Policy:   n.restrictions(goctx),
	}
	if in.RunID == "" {
		in.RunID = agent.NewID("run-")
	}
	// A resumed chain run enters at this node with its suspension: the
	// run goes on from it instead of starting.
	resume := takeResume(goctx, n.chainID, n.nodeID)
	conv, llm, err := n.openSession(goctx, resume, md, messages, in.RunID, sink)
	if err != nil {
		t.failure(msg, err)
		return
	}
	if conv != nil {
		defer conv.Release()
		in.Memory, in.LLM = conv, llm
		var stop func()
		goctx, stop = stopOnLeaseLoss(goctx, conv)
		defer stop()
	}
	out, err := n.runOrResume(goctx, in, resume, sink)
	if se := (*agent.SuspendedError)(nil); errors.As(err, &se) && n.suspend(ctx, goctx, msg, se, conv) {
		t.done = true
		return
	}
	if conv != nil {
		// Before the terminal Tell: the caller may send the session's next
		// request as soon as it has the answer.
		conv.Release()
	}
	if err != nil {
		t.failure(msg, err)
		return
	}
	msg.DataType = types.TEXT
	if n.jsonAnswers && json.Valid([]byte(out.Content)) {
		msg.DataType = types.JSON
	}
	msg.SetData(out.Content)
	m := msg.Metadata
	m.PutValue("model", out.Model)
	m.PutValue("runId", out.RunID)
	m.PutValue("threadId", out.ThreadID)
	m.PutValue("promptTokens", strconv.FormatInt(out.Usage.PromptTokens, 10))
	m.PutValue("completionTokens", strconv.FormatInt(out.Usage.CompletionTokens, 10))
	m.PutValue("totalTokens", strconv.FormatInt(out.Usage.TotalTokens, 10))
	m.PutValue("cachedTokens", strconv.FormatInt(out.Usage.CachedTokens, 10))
	m.PutValue("reasoningTokens", strconv.FormatInt(out.Usage.ReasoningTokens, 10))
	m.PutValue("steps", strconv.Itoa(out.Steps))
	m.PutValue("toolCalls", strconv.Itoa(out.ToolCalls))
	m.PutValue("truncated", strconv.FormatBool(out.Truncated))
	if conv != nil {
		m.PutValue("sessionId", conv.ID())
	}
	t.success(msg)
}

// systemPrompt fills the system prompt's ${...} variables; a prompt without
// any is used as it is, without building RuleGo's variable map per message.
func (n *AgentNode) systemPrompt(env func() map[string]any) string {
	if !n.prompt.HasVar() {
		return n.prompt.ExecuteAsString(nil)
	}
	return n.prompt.ExecuteAsString(env())
}

// restrictions are the tool policies of a run: those of the agents above
// it (a caller's restrictions travel in the context, through rule-chain
// tools, sub-agents and the self MCP server alike), the server's and the
// node's own.
func (n *AgentNode) restrictions(ctx context.Context) *policy.Restrictions {
	inherited := policy.FromContext(ctx)
	if inherited == nil {
		return n.policies
	}
	return inherited.With(policy.LayerServer, n.gov.Policy).With(policy.NodeLayer(n.chainID, n.nodeID), n.policy)
}

// Destroy implements types.Node: it closes the tools' resources.
func (n *AgentNode) Destroy() {
	if n.tools != nil {
		n.tools.Close()
	}
}

// Error codes of Failure messages besides agent.Code*.
const (
	CodeNoLLM    = "no_llm"
	CodeBadInput = "invalid_input"
)

// hasStreamConnection reports whether this node has a Stream connection in
// its chain, so that Stream-relation messages have a consumer.
func (n *AgentNode) hasStreamConnection(ctx types.RuleContext) bool {
	n.streamOnce.Do(func() {
		cc, ok := ctx.RuleChain().(types.ChainCtx)
		if !ok || cc.Definition() == nil {
			return
		}
		self := ctx.GetSelfId()
		for _, c := range cc.Definition().Metadata.Connections {
			if c.FromId == self && c.Type == types.Stream {
				n.streamConn = true
			}
		}
	})
	return n.streamConn
}

// terminal makes sure a message ends with exactly one Tell.
type terminal struct {
	ctx  types.RuleContext
	done bool
}

func (t *terminal) success(msg types.RuleMsg) {
	if !t.done {
		t.done = true
		t.ctx.TellSuccess(msg)
	}
}

func (t *terminal) failure(msg types.RuleMsg, err error) {
	if t.done {
		return
	}
	t.done = true
	failRun(t.ctx, msg, err)
}

// failRun tells Failure with a run's error: its code in metadata errorCode
// (internal_error unless it is an *agent.RunError) and, for a limit
// reached, the limit in errorLimit.
func failRun(ctx types.RuleContext, msg types.RuleMsg, err error) {
	code := agent.CodeInternal
	var re *agent.RunError
	if errors.As(err, &re) {
		code = re.Code
		if re.Limit != "" {
			msg.Metadata.PutValue("errorLimit", re.Limit)
		}
	}
	failWith(ctx, msg, code, err)
}

// failWith tells Failure with err and its code in metadata errorCode.
func failWith(ctx types.RuleContext, msg types.RuleMsg, code string, err error) {
	msg.Metadata.PutValue("errorCode", code)
	ctx.TellFailure(msg, err)
}

func stringMap(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// ruleStreamSink turns events into Stream-relation messages, for RuleGo
// consumers such as an endpoint/http route with an SSE out-processor. Each
// message's data is the event's JSON; metadata eventType names its type.
type ruleStreamSink struct {
	ctx  types.RuleContext
	base types.RuleMsg
	buf  []byte
}

// Emit implements events.Sink. The run's events.Stream calls it from one
// goroutine at a time, in order.
func (s *ruleStreamSink) Emit(e events.Event) {
	m := s.base.Copy()
	m.DataType = types.JSON
	s.buf = e.AppendJSON(s.buf[:0])
	m.SetData(string(s.buf))
	m.Metadata.PutValue("eventType", string(e.Type))
	s.ctx.TellNext(m, types.Stream)
}
