package server

import (
	"net/http"

	"github.com/ruleagent/ruleagent/server/runs"

	"github.com/ruleagent/ruleagent/state/health"
)

// ErrDraining refuses a new run on a server that is shutting down: its
// runs in flight finish, and new ones belong on another replica.
var ErrDraining = runs.ErrDraining

// drainRetryAfter is the Retry-After of a refusal while draining, in
// seconds: another replica takes the run at once.
const drainRetryAfter = "1"

// Drain makes the store refuse new runs (ErrDraining; 503 with
// Retry-After on the HTTP routes that start runs) from now on, while the
// runs in flight go on: the first step of a graceful shutdown (SIGTERM).
func (s *Store) Drain() { s.draining.Store(true) }

// Draining reports whether Drain was called.
func (s *Store) Draining() bool { return s.draining.Load() }

// notWhileDraining refuses the run a route would start while the store
// drains, before anything is streamed: 503 with Retry-After, in the
// route's API shape.
func (o Options) notWhileDraining(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !o.Store.Draining() {
			h(w, r)
			return
		}
		w.Header().Set("Retry-After", drainRetryAfter)
		if isOpenAIPath(r.URL.Path) {
			writeOpenAIError(w, http.StatusServiceUnavailable, ErrDraining.Error(), "server_error", "draining")
			return
		}
		writeError(w, http.StatusServiceUnavailable, ErrDraining.Error())
	}
}

// health answers GET /healthz: the process works (liveness). It says ok
// while the shared store is down (restarting the process would not bring
// it back); its checks say what is wrong, and ready says what /readyz
// would answer.
func (o Options) health(w http.ResponseWriter, r *http.Request) {
	body := map[string]any{"status": "ok"}
	if o.Store != nil {
		body["chains"] = len(o.Store.pool.IDs())
		body["activeRuns"] = o.Store.runs.Active()
		body["readOnly"] = o.Store.readOnly
	}
	rep := o.readiness(r)
	body["ready"] = rep.OK()
	body["draining"] = rep.Draining
	if rep.Replica != "" {
		body["replica"] = rep.Replica
	}
	if len(rep.Checks) > 0 {
		body["checks"] = rep.Checks
	}
	if o.Health != nil {
		for k, v := range o.Health() {
			body[k] = v
		}
	}
	writeJSON(w, http.StatusOK, body)
}

// ready answers GET /readyz: whether this replica should be sent work.
// 200 with status ok; else 503 with status unavailable (a check fails:
// the shared store unreachable, chains not caught up) or draining (it is
// shutting down), and every check with what is wrong.
func (o Options) ready(w http.ResponseWriter, r *http.Request) {
	rep := o.readiness(r)
	code := http.StatusOK
	if !rep.OK() {
		code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", drainRetryAfter)
	}
	writeJSON(w, code, rep)
}

// readiness is the readiness report: the Readiness model's, draining as
// soon as the store drains.
func (o Options) readiness(r *http.Request) health.Report {
	rep := health.Report{Status: health.StatusOK}
	if o.Readiness != nil {
		rep = o.Readiness.Ready(r.Context())
	}
	if o.Store != nil && o.Store.Draining() {
		rep.Status, rep.Draining = health.StatusDraining, true
	}
	return rep
}
