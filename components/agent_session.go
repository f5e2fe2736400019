package components

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/sessions"
)

// SessionsUDF is the key under which a host registers its session store in
// the chains' RuleGo configuration (types.Config.Udf), for the agent nodes
// with a session scope. Like SelfMCPUDF, the value is a types.Script of its
// own type, so RuleGo's JavaScript engine does not copy the store into
// chain scripts.
const SessionsUDF = "ruleagent.sessions"

// SessionsUDFType is the types.Script type of the SessionsUDF value.
const SessionsUDFType = "ruleagent.sessions"

// RegisterSessions registers s as the session store of the chains built
// with cfg. cfg.Udf is created if nil.
func RegisterSessions(cfg *types.Config, s sessions.Store) {
	if cfg.Udf == nil {
		cfg.Udf = map[string]any{}
	}
	cfg.Udf[SessionsUDF] = types.Script{Type: SessionsUDFType, Content: s}
}

// SessionStore returns the session store registered in cfg, or nil.
func SessionStore(cfg types.Config) sessions.Store {
	if sc, ok := cfg.Udf[SessionsUDF].(types.Script); ok && sc.Type == SessionsUDFType {
		s, _ := sc.Content.(sessions.Store)
		return s
	}
	return nil
}

// Error codes of runs that could not continue their session.
const (
	// CodeSessionScope: the scope needs a user or thread id the run lacks.
	CodeSessionScope = "session_scope"
	// CodeSessionBusy: another run of the same session is in progress.
	CodeSessionBusy = "session_busy"
	// CodeSessionNotYours: the thread was started by another verified
	// user (sessions.ErrNotYours).
	CodeSessionNotYours = "session_not_yours"
	// CodeSessionModel: the model asked for is not in allowedModels.
	CodeSessionModel = "session_model"
	// CodeLeaseLost: the run lost its session's lease (its renewals
	// failed: a frozen or unreachable Redis; or another process took it)
	// and was stopped, since another run may continue the session now.
	CodeLeaseLost = "lease_lost"
)

// ErrLeaseLost is the cause of a run stopped because it lost its
// session's lease (code lease_lost).
var ErrLeaseLost = errors.New("the run lost its session's lease (the shared store did not answer its renewals, or another server took the session) and was stopped: its turn is not stored; send the message again")

// stopOnLeaseLoss returns ctx cancelled, with a RunError of code
// lease_lost as its cause, as soon as conv's lease is lost: the run stops
// at once rather than finding out when it writes its turn. stop releases
// the watch.
func stopOnLeaseLoss(ctx context.Context, conv *sessions.Conversation) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case <-conv.Lost():
			cancel(&agent.RunError{Code: CodeLeaseLost, Err: ErrLeaseLost})
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		cancel(nil)
	}
}

// MetaSessionModel is the message metadata that switches a session's model
// to an allowedModels entry (DefaultModelName switches back).
const MetaSessionModel = "sessionModel"

// DefaultModelName names the agent's own model in allowedModels choices.
const DefaultModelName = "default"

// agentSession is a node's session set-up.
type agentSession struct {
	cfg    sessions.Config
	store  sessions.Store
	models map[string]*agent.Client
	names  []string
}

// initSession prepares the node's sessions: the store from rc, the agent
// name, and a client per allowed model.
func (n *AgentNode) initSession(rc types.Config, spec *sessionSpec, llm agent.LLMConfig) error {
	if spec == nil || spec.cfg.Scope == sessions.ScopeNone {
		return nil
	}
	st := SessionStore(rc)
	if st == nil {
		return configerr.New("session", "no session store is configured (ruleagent serve and run have one; a Go host registers one with components.RegisterSessions)")
	}
	s := &agentSession{cfg: spec.cfg, store: st, models: map[string]*agent.Client{}}
	if s.cfg.Agent == "" {
		s.cfg.Agent = n.chainID
	}
	if s.cfg.Agent == "" {
		return configerr.New("session.name", "missing, and the chain has no id to default to")
	}
	for _, m := range spec.models {
		s.names = append(s.names, m.Name)
		if n.noLLM != nil {
			continue
		}
		c, err := agent.NewClient(m.clientConfig(llm))
		if err != nil {
			return configerr.Prefix(fmt.Sprintf("session.allowedModels[%s]", m.Name), err)
		}
		s.models[m.Name] = c
	}
	n.session = s
	return nil
}

// beginSession starts the run's hold on its session: nil without one. The
// client is the session's model, nil for the agent's own.
func (n *AgentNode) beginSession(ctx context.Context, md map[string]string, msgs []events.Message, runID string) (*sessions.Conversation, *agent.Client, error) {
	s := n.session
	if s == nil {
		return nil, nil, nil
	}
	key, _, err := sessions.KeyFor(s.cfg.Scope, s.cfg.Agent, md)
	if err != nil {
		return nil, nil, &agent.RunError{Code: CodeSessionScope, Err: err}
	}
	conv, err := sessions.Begin(ctx, s.store, &s.cfg, key, msgs, sessions.Run{RunID: runID, ChainID: n.chainID, NodeID: n.nodeID,
		Owner: md[agent.MetaVerifiedUser]})
	switch {
	case errors.Is(err, sessions.ErrBusy):
		return nil, nil, &agent.RunError{Code: CodeSessionBusy, Err: err}
	case errors.Is(err, sessions.ErrNotYours):
		return nil, nil, &agent.RunError{Code: CodeSessionNotYours, Err: err}
	case errors.Is(err, sessions.ErrNothingNew):
		return nil, nil, &agent.RunError{Code: CodeBadInput, Err: err}
	case err != nil:
		return nil, nil, &agent.RunError{Code: agent.CodeSession, Err: err}
	}
	if want := strings.TrimSpace(md[MetaSessionModel]); want != "" {
		if want == DefaultModelName {
			want = ""
		}
		conv.SetModel(want)
	}
	name := conv.Model()
	if name == "" {
		return conv, nil, nil
	}
	c, ok := s.models[name]
	if !ok {
		conv.Release()
		return nil, nil, &agent.RunError{Code: CodeSessionModel, Err: fmt.Errorf(
			"session %s: model %q is not in this agent's session.allowedModels (%s); choose one, or %q for the agent's own model",
			conv.ID(), name, strings.Join(s.names, ", "), DefaultModelName)}
	}
	return conv, c, nil
}

// resumeSession takes the session of a paused run again (nil when the run
// kept none): the run keeps its turn as it would have without the pause.
func (n *AgentNode) resumeSession(ctx context.Context, snap *sessions.Snapshot, runID string) (*sessions.Conversation, *agent.Client, error) {
	s := n.session
	if s == nil || snap == nil {
		return nil, nil, nil
	}
	conv, err := sessions.Resume(ctx, s.store, &s.cfg, snap, sessions.Run{RunID: runID, ChainID: n.chainID, NodeID: n.nodeID})
	switch {
	case errors.Is(err, sessions.ErrBusy):
		return nil, nil, &agent.RunError{Code: CodeSessionBusy, Err: err}
	case err != nil:
		return nil, nil, &agent.RunError{Code: agent.CodeSession, Err: err}
	}
	if name := conv.Model(); name != "" {
		c, ok := s.models[name]
		if !ok {
			conv.Release()
			return nil, nil, &agent.RunError{Code: CodeSessionModel, Err: fmt.Errorf("session %s: model %q is no longer in this agent's session.allowedModels", conv.ID(), name)}
		}
		return conv, c, nil
	}
	return conv, nil, nil
}

// sessionSpec is the checked session configuration of a node.
type sessionSpec struct {
	cfg    sessions.Config
	models []allowedModel
}

// allowedModel is one session.allowedModels entry: a model on the agent's
// endpoint, or on an endpoint of its own.
type allowedModel struct {
	Name   string         `json:"name"`
	Model  string         `json:"model"`
	URL    string         `json:"url"`
	Key    string         `json:"key"`
	Params map[string]any `json:"params"`
	params *agent.Params
}

// clientConfig is the entry's LLM configuration: the agent's retry
// settings, its endpoint unless the entry has its own (whose key is then
// the entry's alone, never the agent's), its params unless the entry's.
func (m *allowedModel) clientConfig(base agent.LLMConfig) agent.LLMConfig {
	primary := base.Endpoints[0]
	ep := agent.Endpoint{URL: primary.URL, Key: primary.Key, Model: m.Model, Params: primary.Params}
	if m.URL != "" {
		ep.URL, ep.Key = m.URL, m.Key
	}
	if m.params != nil {
		ep.Params = m.params
	}
	base.Endpoints = []agent.Endpoint{ep}
	return base
}

// sessionFields is the session object of a node's configuration.
type sessionFields struct {
	Scope              string         `json:"scope"`
	Name               string         `json:"name"`
	Memory             string         `json:"memory"`
	ToolResultLimit    int            `json:"toolResultLimit"`
	MaxHistoryMessages int            `json:"maxHistoryMessages"`
	MaxHistoryTokens   int            `json:"maxHistoryTokens"`
	Compaction         map[string]any `json:"compaction"`
	TTL                string         `json:"ttl"`
	AllowedModels      []any          `json:"allowedModels"`
}

// DefaultSessionTTL is how long an idle session lives unless session.ttl
// says otherwise.
const DefaultSessionTTL = "720h"

// parseSession checks the session object of a node's configuration; nil
// for none.
func parseSession(raw map[string]any) (*sessionSpec, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	f := sessionFields{TTL: DefaultSessionTTL}
	if err := strictJSON(raw, &f); err != nil {
		return nil, configerr.Prefix("session", err)
	}
	sp := &sessionSpec{}
	c := &sp.cfg
	var err error
	if c.Scope, err = sessions.ParseScope(f.Scope); err != nil {
		return nil, configerr.Prefix("session.scope", err)
	}
	if c.Memory, err = sessions.ParsePolicy(f.Memory); err != nil {
		return nil, configerr.Prefix("session.memory", err)
	}
	c.Agent = strings.TrimSpace(f.Name)
	c.ToolResultLimit = cmp.Or(f.ToolResultLimit, sessions.DefaultToolResultLimit)
	switch {
	case f.ToolResultLimit < 0:
		return nil, configerr.New("session.toolResultLimit", "must not be negative")
	case f.MaxHistoryMessages < 0:
		return nil, configerr.New("session.maxHistoryMessages", "must not be negative")
	case f.MaxHistoryTokens < 0:
		return nil, configerr.New("session.maxHistoryTokens", "must not be negative")
	}
	c.Budget = sessions.Budget{MaxMessages: f.MaxHistoryMessages, MaxTokens: f.MaxHistoryTokens}
	if c.TTL, err = duration("session.ttl", f.TTL); err != nil {
		return nil, err
	}
	if f.Compaction != nil {
		var cc struct {
			KeepTurns *int   `json:"keepTurns"`
			Prompt    string `json:"prompt"`
		}
		if err := strictJSON(f.Compaction, &cc); err != nil {
			return nil, configerr.Prefix("session.compaction", err)
		}
		c.Compaction = &sessions.CompactionConfig{KeepTurns: sessions.DefaultKeepTurns, Prompt: cc.Prompt}
		if cc.KeepTurns != nil {
			if *cc.KeepTurns < 1 {
				return nil, configerr.New("session.compaction.keepTurns", "must be at least 1")
			}
			c.Compaction.KeepTurns = *cc.KeepTurns
		}
		if !c.Budget.Set() {
			return nil, configerr.New("session.compaction", "needs a budget to compact at (maxHistoryMessages or maxHistoryTokens)")
		}
	}
	if sp.models, err = parseAllowedModels(f.AllowedModels); err != nil {
		return nil, err
	}
	return sp, nil
}

func parseAllowedModels(list []any) ([]allowedModel, error) {
	var out []allowedModel
	for i, item := range list {
		field := fmt.Sprintf("session.allowedModels[%d]", i)
		var m allowedModel
		switch v := item.(type) {
		case string:
			m.Model = strings.TrimSpace(v)
		case map[string]any:
			if err := strictJSON(v, &m); err != nil {
				return nil, configerr.Prefix(field, err)
			}
		default:
			return nil, configerr.New(field, "want a model name or {name, model, url, key, params}")
		}
		m.Name, m.Model, m.URL, m.Key = strings.TrimSpace(m.Name), strings.TrimSpace(m.Model), strings.TrimSpace(m.URL), strings.TrimSpace(m.Key)
		if m.Model == "" {
			return nil, configerr.New(field+".model", "missing")
		}
		if m.Name == "" {
			m.Name = m.Model
		}
		if m.Name == DefaultModelName {
			return nil, configerr.New(field+".name", "%q names the agent's own model; choose another name", DefaultModelName)
		}
		if m.URL != "" && !strings.HasPrefix(m.URL, "http://") && !strings.HasPrefix(m.URL, "https://") {
			return nil, configerr.New(field+".url", "%q must start with http:// or https://", m.URL)
		}
		if slices.ContainsFunc(out, func(o allowedModel) bool { return o.Name == m.Name }) {
			return nil, configerr.New(field+".name", "two entries are named %q", m.Name)
		}
		if len(m.Params) > 0 {
			m.params = &agent.Params{}
			if err := strictJSON(m.Params, m.params); err != nil {
				return nil, configerr.Prefix(field+".params", err)
			}
		}
		out = append(out, m)
	}
	return out, nil
}
