package server

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/aguicheck"
)

// blockingNode ignores cancellation: it waits for its release, then
// writes an event into its run's sink and goes on.
type blockingNode struct{}

var blockingRelease = struct {
	sync.Mutex
	ch chan struct{}
}{ch: make(chan struct{})}

func (*blockingNode) New() types.Node                              { return &blockingNode{} }
func (*blockingNode) Type() string                                 { return "test/blocking" }
func (*blockingNode) Init(types.Config, types.Configuration) error { return nil }
func (*blockingNode) Destroy()                                     {}
func (*blockingNode) OnMsg(ctx types.RuleContext, msg types.RuleMsg) {
	blockingRelease.Lock()
	ch := blockingRelease.ch
	blockingRelease.Unlock()
	<-ch
	if s := events.SinkFrom(ctx.GetContext()); s != nil {
		s.Emit(events.Event{Type: events.Custom, Name: "test.late", Value: []byte(`"late"`)})
	}
	ctx.TellSuccess(msg)
}

func init() { _ = rulego.Registry.Register(&blockingNode{}) }

// A run whose client goes away is cancelled and waited for as a chain
// tool's is, at most the cancel grace, even when a node ignores the
// cancellation: the request ends with one terminal event (cancelled), and
// what the node does later never reaches the client's sink.
func TestClientGoneEndsTheRequestAtTheGrace(t *testing.T) {
	s := chainStore(t, nil, map[string]string{"blocking": `{"ruleChain": {"id": "blocking", "name": "Blocking"},
		"metadata": {"nodes": [{"id": "b", "type": "test/blocking", "name": "Block"}]}}`})
	release := make(chan struct{})
	blockingRelease.Lock()
	blockingRelease.ch = release
	blockingRelease.Unlock()
	releaseAt := time.AfterFunc(12*time.Second, func() { close(release) })
	defer func() {
		if releaseAt.Stop() {
			close(release)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var rec events.Recorder
	start := time.Now()
	res, err := s.Run(ctx, RunRequest{ChainID: "blocking", Input: "x", Sink: &rec})
	took := time.Since(start)
	var rf *RunFailure
	if !errors.As(err, &rf) || res.Outcome != OutcomeCancelled || took > 10*time.Second {
		t.Fatalf("after %v: outcome %q, err %v", took, res.Outcome, err)
	}
	n := len(rec.Events())
	if releaseAt.Stop() {
		close(release)
	}
	time.Sleep(300 * time.Millisecond)
	if evs := rec.Events(); len(evs) != n {
		t.Fatalf("written after the request ended: %+v", evs[n:])
	}
	for _, v := range aguicheck.Check(rec.JSON()) {
		t.Errorf("AG-UI violation: %v", v)
	}
	if last := rec.Events()[n-1]; last.Type != events.RunFinished || last.Outcome != events.OutcomeCancelled {
		t.Fatalf("terminal %+v", last)
	}
}
