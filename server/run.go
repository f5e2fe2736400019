package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
)

// Result is the end of a chain run.
type Result struct {
	// Msg is the final message: the answer in its data, usage and run ids
	// in its metadata.
	Msg types.RuleMsg
	// Relation is Success or Failure.
	Relation string
}

// ErrNoChain reports a chain id with nothing deployed.
var ErrNoChain = errors.New("no such chain")

// RunChain runs chain id once with input as message data (JSON when it
// looks like a JSON object) and metadata md, streaming the run's events to
// sink (which may be nil). It waits for the chain to end. A chain that ends
// in Failure returns its message with the error.
func (s *Store) RunChain(ctx context.Context, id string, input string, md map[string]string, sink events.Sink) (Result, error) {
	e, ok := s.Engine(id)
	if !ok {
		return Result{}, fmt.Errorf("%w: %q", ErrNoChain, id)
	}
	meta := types.NewMetadata()
	for k, v := range md {
		meta.PutValue(k, v)
	}
	dt := types.TEXT
	if t := strings.TrimSpace(input); strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
		dt = types.JSON
	}
	msg := types.NewMsg(0, "CHAT", dt, meta, input)
	if sink != nil {
		ctx = events.WithSink(ctx, sink)
	}
	var (
		mu     sync.Mutex
		res    Result
		runErr error
		ended  bool
	)
	e.OnMsgAndWait(msg, types.WithContext(ctx), types.WithOnEnd(func(_ types.RuleContext, m types.RuleMsg, err error, rel string) {
		if rel == types.Stream {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		// Several ends (a chain with branches): a failure wins, then the
		// last success.
		if err != nil && runErr == nil {
			runErr, res = err, Result{Msg: m, Relation: rel}
		}
		if runErr == nil {
			res = Result{Msg: m, Relation: rel}
		}
		ended = true
	}))
	if runErr != nil {
		return res, runErr
	}
	if !ended {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		return res, errors.New("the chain ended without a result")
	}
	return res, nil
}
