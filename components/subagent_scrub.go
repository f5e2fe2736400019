package components

import (
	"encoding/json"

	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/engine"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// A chain called as a tool, a sub-agent in particular, knows secrets its
// caller does not: its own LLM key and the values in its tools' config
// (bash env, MCP headers). Its answer is what its model wrote, which is
// not scrubbed inside its own run, so before the answer leaves the chain
// (as the caller's tool result, and as the SUBAGENT_FINISHED result in the
// caller's event stream) it is scrubbed with the scrubbers of every agent
// node of that chain, which also apply the token patterns. The caller's
// wrapper then scrubs the tool result with the caller's own secrets.

// chainScrubber returns a function that scrubs text with the secrets of
// every agent node of the chain run by e, and the token patterns.
func chainScrubber(e types.RuleEngine) func(string) string {
	scrubbers := []*scrub.Scrubber{scrub.New()}
	if cc := e.RootRuleChainCtx(); cc != nil {
		for _, n := range e.Definition().Metadata.Nodes {
			nc, ok := cc.GetNodeById(types.RuleNodeId{Id: n.Id, Type: types.NODE})
			if !ok {
				continue
			}
			if rn, ok := nc.(*engine.RuleNodeCtx); ok {
				if an, ok := rn.Node.(*AgentNode); ok && an.scrubber != nil {
					scrubbers = append(scrubbers, an.scrubber)
				}
			}
		}
	}
	return func(s string) string {
		for _, sc := range scrubbers {
			s = sc.Scrub(s)
		}
		return s
	}
}

// scrubbingSink scrubs the results and error messages that end a nested
// run before they reach the caller's stream.
type scrubbingSink struct {
	next  events.Sink
	scrub func(string) string
}

func (s scrubbingSink) Emit(e events.Event) {
	switch e.Type {
	case events.RunFinished, events.SubagentFinished:
		if len(e.Result) > 0 {
			scrubbed := s.scrub(string(e.Result))
			if json.Valid([]byte(scrubbed)) {
				e.Result = json.RawMessage(scrubbed)
			} else {
				e.Result, _ = json.Marshal(scrubbed)
			}
		}
	case events.RunError, events.SubagentError:
		e.Message = s.scrub(e.Message)
	}
	s.next.Emit(e)
}
