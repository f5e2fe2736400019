package chainpool

import (
	"sync"
	"testing"

	"github.com/rulego/rulego/api/types"
)

// Concurrent News of one chain (RuleGo's flow nodes and sub-chains call
// the pool's New) build it once and all get the engine that stays
// published. Each used to build its own and publish it, retiring the
// engine the previous caller had just been handed: its runs were then
// stopped under it.
func TestPoolNewConcurrent(t *testing.T) {
	p := New()
	t.Cleanup(p.Stop)
	dsl := []byte(`{"ruleChain":{"id":"sub","name":"Sub"},"metadata":{"nodes":[{"id":"js","type":"jsTransform","name":"JS","configuration":{"jsScript":"return {msg: msg, metadata: metadata, msgType: msgType};"}}]}}`)
	const callers = 16
	got := make([]types.RuleEngine, callers)
	var start, wg sync.WaitGroup
	start.Add(1)
	for i := range callers {
		wg.Go(func() {
			start.Wait()
			e, err := p.New("", dsl)
			if err != nil {
				t.Error(err)
			}
			got[i] = e
		})
	}
	start.Done()
	wg.Wait()
	published, ok := p.Get("sub")
	if !ok {
		t.Fatal("the chain is not published")
	}
	for i, e := range got {
		if e != published {
			t.Errorf("caller %d got an engine other than the published one", i)
		}
	}
	p.mu.RLock()
	retiring := len(p.retiring)
	p.mu.RUnlock()
	if retiring != 0 {
		t.Errorf("%d engines were retired by New", retiring)
	}
	if !published.Initialized() {
		t.Error("the published engine was stopped")
	}

	// A failing build fails every caller, and leaves nothing behind.
	if _, err := p.New("bad", []byte(`{"ruleChain":{"id":"bad"},"metadata":{"nodes":[{"id":"x","type":"nope"}]}}`)); err == nil {
		t.Error("a chain that cannot be built was built")
	}
	if _, ok := p.Get("bad"); ok {
		t.Error("a failed build was published")
	}
}
