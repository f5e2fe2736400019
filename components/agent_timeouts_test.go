package components

import (
	"strings"
	"testing"
	"time"

	"github.com/rulego/rulego"

	"github.com/ruleagent/ruleagent/agent"
)

// firstByteTimeout and idleTimeout default to the documented values, "0"
// disables each, and a bad value fails Init naming the field.
func TestStreamTimeoutsConfig(t *testing.T) {
	c := defaultConfig()
	c.URL, c.Model = "http://x/v1", "m"
	p, err := c.parse()
	if err != nil {
		t.Fatal(err)
	}
	if p.llm.FirstByteTimeout != agent.DefaultFirstByteTimeout || p.llm.IdleTimeout != agent.DefaultIdleTimeout ||
		c.FirstByteTimeout != "2m0s" || c.IdleTimeout != "1m0s" {
		t.Fatalf("defaults %v, %v (%q, %q)", p.llm.FirstByteTimeout, p.llm.IdleTimeout, c.FirstByteTimeout, c.IdleTimeout)
	}
	c.FirstByteTimeout, c.IdleTimeout = "0", "90s"
	if p, err = c.parse(); err != nil || p.llm.FirstByteTimeout != 0 || p.llm.IdleTimeout != 90*time.Second {
		t.Fatalf("%v %v", p, err)
	}
	for _, field := range []string{"firstByteTimeout", "idleTimeout"} {
		for _, node := range []func() (string, []byte){
			func() (string, []byte) { return agentChain(t, "http://127.0.0.1:1/v1", map[string]any{field: "soon"}) },
			func() (string, []byte) { return intentChain(t, "http://127.0.0.1:1/v1", map[string]any{field: "-1s"}) },
		} {
			id, dsl := node()
			if _, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig())); err == nil || !strings.Contains(err.Error(), field) {
				t.Errorf("%s: err %v", field, err)
			}
		}
	}
}
