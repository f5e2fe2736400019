package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/state/control"
	"github.com/ruleagent/ruleagent/state/eventlog"
)

// The control messages a replica answers about its runs.
const (
	// controlCancel cancels a run (POST /api/v1/runs/{id}/cancel on
	// another replica).
	controlCancel = "cancel"
	// controlFollow says a client follows a run (its log, from any
	// replica): a run whose own client left goes on.
	controlFollow = "follow"
	// controlRuns asks for the replica's runs in progress (the fleet's
	// GET /api/v1/runs).
	controlRuns = "runs"
)

// controlHandlers dispatches the control messages sent to this replica by
// kind; packages of the server add their own kinds (handle).
type controlHandlers struct {
	mu    sync.Mutex
	kinds map[string]control.Handler
}

func newControlHandlers(rl *runLogs) *controlHandlers {
	h := &controlHandlers{kinds: map[string]control.Handler{}}
	h.set(controlCancel, rl.onCancel)
	h.set(controlFollow, rl.onFollow)
	h.set(controlRuns, rl.onRuns)
	return h
}

// set makes fn answer the messages of kind.
func (h *controlHandlers) set(kind string, fn control.Handler) {
	h.mu.Lock()
	h.kinds[kind] = fn
	h.mu.Unlock()
}

// handle implements control.Handler.
func (h *controlHandlers) handle(ctx context.Context, m control.Message) control.Reply {
	h.mu.Lock()
	fn := h.kinds[m.Kind]
	h.mu.Unlock()
	if fn == nil {
		return replyJSON(http.StatusBadRequest, map[string]string{"error": "no control message " + quote(m.Kind)})
	}
	return fn(ctx, m)
}

func replyJSON(status int, v any) control.Reply {
	b, _ := json.Marshal(v)
	return control.Reply{Status: status, Body: b}
}

// send delivers m to replica to (this process's own messages are handled
// directly), its reply or why there is none (control.ErrUnreachable,
// control.ErrNoAnswer).
func (rl *runLogs) send(ctx context.Context, to string, m control.Message) (control.Reply, error) {
	if to == rl.Replica {
		return rl.control.handle(ctx, m), nil
	}
	return rl.Control.Send(ctx, to, m)
}

// onCancel cancels a run of this replica.
func (rl *runLogs) onCancel(_ context.Context, m control.Message) control.Reply {
	if !rl.s.runs.Cancel(m.RunID) {
		return replyJSON(http.StatusNotFound, map[string]string{"error": "no run " + quote(m.RunID) + " is in progress on replica " + rl.Replica})
	}
	return replyJSON(http.StatusAccepted, map[string]any{"runId": m.RunID, "cancelled": true, "replica": rl.Replica})
}

// onFollow keeps a run whose client left going: someone follows it.
func (rl *runLogs) onFollow(_ context.Context, m control.Message) control.Reply {
	if st := rl.local(m.RunID); st != nil {
		st.followed()
	}
	return control.Reply{Status: http.StatusNoContent}
}

// onRuns answers the replica's runs in progress, with their progress.
func (rl *runLogs) onRuns(context.Context, control.Message) control.Reply {
	return replyJSON(http.StatusOK, rl.s.runs.List())
}

// cancelRemote cancels run id on the replica that runs it, for a caller
// that may act on it (p). It answers the HTTP status and body.
func (rl *runLogs) cancelRemote(ctx context.Context, id string, mayAct func(owner string) bool) (int, any) {
	m, err := rl.Events.Meta(ctx, id)
	switch {
	case errors.Is(err, eventlog.ErrNotFound) || err == nil && !mayAct(m.UserID):
		// Another caller's run is as unknown as one that never was.
		return http.StatusNotFound, map[string]string{"error": "no run " + quote(id) + " is in progress"}
	case err != nil:
		return http.StatusServiceUnavailable, map[string]string{"error": "the runs' store cannot be read, so the run's replica is not known (try again): " + err.Error()}
	case m.Ended():
		return http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no run %s is in progress: it ended (%s)", quote(id), m.Status)}
	case m.Owner == rl.Replica:
		return http.StatusNotFound, map[string]string{"error": "no run " + quote(id) + " is in progress"}
	}
	sctx, cancel := context.WithTimeout(ctx, control.DefaultTimeout+time.Second)
	defer cancel()
	reply, err := rl.send(sctx, m.Owner, control.Message{Kind: controlCancel, RunID: id})
	switch {
	case errors.Is(err, control.ErrUnreachable) && rl.ownerGone(ctx, m):
		rl.endLost(ctx, m)
		return http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no run %s is in progress: the replica running it (%s) is gone, and the run ended with %s",
			quote(id), m.Owner, codeReplicaLost)}
	case errors.Is(err, control.ErrNoAnswer):
		return http.StatusGatewayTimeout, map[string]string{"error": fmt.Sprintf("the replica running run %s (%s) did not answer in time: the run may not be cancelled; try again", quote(id), m.Owner)}
	case err != nil:
		return http.StatusServiceUnavailable, map[string]string{"error": "cannot reach the replica running run " + quote(id) + ": " + err.Error()}
	}
	var body any = json.RawMessage(reply.Body)
	if len(reply.Body) == 0 {
		body = map[string]any{}
	}
	return reply.Status, body
}

// fleetRuns lists the runs in progress on every replica: this one's from
// its registry, the others' as they answer (their progress), or as their
// logs describe them.
func (rl *runLogs) fleetRuns(ctx context.Context) []runs.Info {
	out := rl.s.runs.List()
	for i := range out {
		out[i].Replica = rl.Replica
	}
	live, err := rl.Events.List(ctx, eventlogLive)
	if err != nil {
		rl.s.log.Warn("the fleet's runs are not listed", "err", err)
		return out
	}
	mine := map[string]bool{}
	for _, in := range out {
		mine[in.RunID] = true
	}
	byOwner := map[string][]int{} // owner -> indexes in live
	for i, m := range live {
		// A paused run is a checkpoint, listed from the checkpoints.
		if m.Owner != rl.Replica && !mine[m.RunID] && m.Status != eventlog.StatusWaiting {
			byOwner[m.Owner] = append(byOwner[m.Owner], i)
		}
	}
	// Each other replica answers for its runs, in parallel.
	answers := make(map[string]map[string]runs.Info, len(byOwner))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for owner := range byOwner {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			reply, err := rl.send(sctx, owner, control.Message{Kind: controlRuns})
			var infos []runs.Info
			if err != nil || reply.Status != http.StatusOK || json.Unmarshal(reply.Body, &infos) != nil {
				return
			}
			got := make(map[string]runs.Info, len(infos))
			for _, in := range infos {
				got[in.RunID] = in
			}
			mu.Lock()
			answers[owner] = got
			mu.Unlock()
		})
	}
	wg.Wait()
	for owner, idx := range byOwner {
		for _, i := range idx {
			m := live[i]
			in, ok := answers[owner][m.RunID]
			if !ok {
				in = runs.Info{RunID: m.RunID, ThreadID: m.ThreadID, ChainID: m.ChainID, Source: m.Source, User: m.UserID,
					StartedAt: m.StartedAt, Status: m.Status}
			}
			in.Replica = owner
			out = append(out, in)
		}
	}
	runs.SortInfos(out)
	return out
}
