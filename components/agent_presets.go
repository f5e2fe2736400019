package components

import (
	"fmt"

	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/utils/el"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/events"
)

// presetMessage is one of an agent's preset messages (the messages
// field): a role and a RuleGo template over the incoming message.
type presetMessage struct {
	role    events.Role
	content el.Template
}

// parsePresets checks the messages field: each entry a {role, content}
// whose content compiles as a template.
func parsePresets(list []any) ([]presetMessage, error) {
	out := make([]presetMessage, 0, len(list))
	for i, item := range list {
		var m struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}
		if err := strictJSON(item, &m); err != nil {
			return nil, configerr.Prefix(fmt.Sprintf("messages[%d]", i), err)
		}
		role := events.Role(m.Role)
		if role != events.RoleUser && role != events.RoleAssistant && role != events.RoleSystem {
			return nil, configerr.New(fmt.Sprintf("messages[%d].role", i), "%q is not one of user, assistant, system", m.Role)
		}
		if m.Content == "" {
			return nil, configerr.New(fmt.Sprintf("messages[%d].content", i), "missing")
		}
		t, err := el.NewTemplate(m.Content)
		if err != nil {
			return nil, configerr.Prefix(fmt.Sprintf("messages[%d].content", i), err)
		}
		out = append(out, presetMessage{role: role, content: t})
	}
	if len(out) > 0 && out[len(out)-1].role != events.RoleUser {
		return nil, configerr.New(fmt.Sprintf("messages[%d].role", len(out)-1), "the last preset message must be the user's")
	}
	return out, nil
}

// input is the conversation of a run: the message's own (a chat request,
// or data without presets, as agent.ParseInput reads it), else the preset
// messages filled in from the message (env).
func (n *AgentNode) input(msg types.RuleMsg, env func() map[string]any) ([]events.Message, error) {
	data := []byte(msg.GetData())
	if len(n.presets) == 0 || agent.IsConversation(data) {
		return agent.ParseInput(data)
	}
	vars := env()
	out := make([]events.Message, len(n.presets))
	for i, p := range n.presets {
		out[i] = events.Message{Role: p.role, Content: p.content.ExecuteAsString(vars)}
	}
	return out, nil
}
