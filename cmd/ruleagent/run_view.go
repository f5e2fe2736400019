package main

import (
	"context"
	"fmt"
	"io"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server"
)

// runView is how `run` shows a run.
type runView struct {
	asJSON   bool // AG-UI events as JSON lines instead of the terminal view
	showMeta bool // the result's metadata after the usage line
	notes    *noteSink
	stdout   io.Writer
	stderr   io.Writer
}

// runAndShow runs req on store and shows it. The run does not end with
// ctx: when ctx ends (Ctrl+C, SIGTERM) the run is cancelled with ctx's
// cause, so that it ends as cancelled by the user and the command exits
// as the shell expects of a signal (130 for Ctrl+C).
func runAndShow(ctx context.Context, store *server.Store, req server.RunRequest, v runView) error {
	req.RunID = agent.NewID("run-")
	var sink events.Sink
	var render *terminal
	if v.asJSON {
		sink = events.NewJSONLines(v.stdout)
	} else {
		tty := isTerminal(v.stdout)
		render = newTerminal(v.stdout, v.stderr, tty)
		if tty && isTerminal(v.stderr) {
			render.showStatus(v.stderr, req.ChainID)
		}
		v.notes.through(render)
		defer v.notes.through(nil)
		sink = render
		// The chain's own nodes, on the terminal only: they are no AG-UI
		// events (--json prints none).
		if e, ok := store.Engine(req.ChainID); ok {
			req.OnNode = chainSteps(render, e)
		}
	}
	cancel := func() {
		if r, ok := store.Runs().Get(req.RunID); ok {
			r.Cancel(context.Cause(ctx))
		}
	}
	defer context.AfterFunc(ctx, cancel)()
	req.Sink = events.SinkFunc(func(e events.Event) {
		sink.Emit(e)
		if e.Type == events.RunStarted && ctx.Err() != nil {
			cancel() // the signal came before the run was registered
		}
	})
	res, err := store.Run(context.WithoutCancel(ctx), req)
	if render != nil {
		render.finish(res, err, v.showMeta)
	}
	if in, ok := signalled(err); ok {
		return &exitError{code: in.exitCode(), err: fmt.Errorf("the run was %s", in.byUser())}
	}
	if err != nil {
		return explain(err)
	}
	return nil
}
