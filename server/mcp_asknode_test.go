package server

import (
	"encoding/json"
	"errors"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/tools/ask"
)

// askNode is a test node that asks a person through the input hook
// (package ask), as governance's approvals will: its question comes from
// its configuration (id, message, schema), or its message from the field
// messageFrom of the message data. It tells the answer on as its data:
// {"action": ..., "content": {...}}, so the next node can use it.
type askNode struct {
	q           ask.Question
	messageFrom string
}

func (*askNode) Type() string       { return "test/ask" }
func (*askNode) New() types.Node    { return &askNode{} }
func (*askNode) Destroy()           {}
func (n *askNode) Category() string { return "test" }

func (n *askNode) Init(_ types.Config, c types.Configuration) error {
	n.q.ID, _ = c["id"].(string)
	n.q.Message, _ = c["message"].(string)
	n.messageFrom, _ = c["messageFrom"].(string)
	if s, ok := c["schema"]; ok {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		n.q.Schema = b
	}
	if n.q.Message == "" && n.messageFrom == "" {
		return errors.New("test/ask needs message or messageFrom")
	}
	return nil
}

func (n *askNode) OnMsg(ctx types.RuleContext, msg types.RuleMsg) {
	q := n.q
	if n.messageFrom != "" {
		var data map[string]any
		_ = json.Unmarshal([]byte(msg.GetData()), &data)
		if m, ok := data[n.messageFrom].(string); ok && m != "" {
			q.Message = m
		}
	}
	a, err := ask.Ask(ctx.GetContext(), q)
	if err != nil {
		ctx.TellFailure(msg, err)
		return
	}
	out, _ := json.Marshal(map[string]any{"action": a.Action, "content": a.Content})
	msg.DataType = types.JSON
	msg.SetData(string(out))
	ctx.TellSuccess(msg)
}

func init() { _ = rulego.Registry.Register(&askNode{}) }
