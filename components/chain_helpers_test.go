package components

import (
	"encoding/json"
	"strconv"
	"sync"
	"testing"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
)

// markNode records that it ran (and the message it saw), so tests can tell
// whether a chain went on after being cancelled.
type markNode struct{}

var marks = struct {
	sync.Mutex
	seen map[string][]types.RuleMsg
}{seen: map[string][]types.RuleMsg{}}

func (*markNode) Type() string                                 { return "test/mark" }
func (*markNode) New() types.Node                              { return &markNode{} }
func (*markNode) Init(types.Config, types.Configuration) error { return nil }
func (*markNode) Destroy()                                     {}
func (*markNode) OnMsg(ctx types.RuleContext, msg types.RuleMsg) {
	marks.Lock()
	marks.seen[ctx.RuleChain().GetNodeId().Id] = append(marks.seen[ctx.RuleChain().GetNodeId().Id], msg.Copy())
	marks.Unlock()
	ctx.TellSuccess(msg)
}

func init() {
	_ = rulego.Registry.Register(&markNode{})
	_ = rulego.Registry.Register(&countNode{})
}

func marked(chainID string) []types.RuleMsg {
	marks.Lock()
	defer marks.Unlock()
	return append([]types.RuleMsg(nil), marks.seen[chainID]...)
}

// pool is a private engine pool for a test.
func pool(t *testing.T) *rulego.RuleGo {
	p := rulego.NewRuleGo()
	t.Cleanup(p.Stop)
	return p
}

func deploy(t *testing.T, p *rulego.RuleGo, dsl any) types.RuleEngine {
	t.Helper()
	b, ok := dsl.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(dsl); err != nil {
			t.Fatal(err)
		}
	}
	var head struct {
		RuleChain struct{ ID string } `json:"ruleChain"`
	}
	_ = json.Unmarshal(b, &head)
	e, err := p.New(head.RuleChain.ID, b, rulego.WithConfig(rulego.NewConfig()))
	if err != nil {
		t.Fatal(err)
	}
	// A chain deployed afresh has run nowhere yet (go test -count reruns a
	// test with the same chain ids).
	marks.Lock()
	delete(marks.seen, head.RuleChain.ID)
	marks.Unlock()
	return e
}

// chain builds chain DSL from nodes and connections.
func chain(id, name string, info map[string]any, nodes []map[string]any, conns ...[3]string) map[string]any {
	var cs []any
	for _, c := range conns {
		cs = append(cs, map[string]any{"fromId": c[0], "toId": c[1], "type": c[2]})
	}
	ns := make([]any, len(nodes))
	for i, n := range nodes {
		ns[i] = n
	}
	return map[string]any{
		"ruleChain": map[string]any{"id": id, "name": name, "additionalInfo": info},
		"metadata":  map[string]any{"firstNodeIndex": 0, "nodes": ns, "connections": cs},
	}
}

func jsNode(id, name, script string) map[string]any {
	return map[string]any{"id": id, "type": "jsTransform", "name": name, "configuration": map[string]any{"jsScript": script}}
}

func agentNode(url, prompt string, extra map[string]any) map[string]any {
	cfg := map[string]any{"url": url, "model": "test-model", "systemPrompt": prompt, "retryBackoff": "1ms"}
	for k, v := range extra {
		cfg[k] = v
	}
	return map[string]any{"id": "agent", "type": AgentType, "name": "Agent", "configuration": cfg}
}

func itoa(n int) string { return strconv.Itoa(n) }
