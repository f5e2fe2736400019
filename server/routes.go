package server

import (
	"net/http"
	"strings"

	"github.com/ruleagent/ruleagent/editor"
	"github.com/ruleagent/ruleagent/examples"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/live"
)

// routes is the route table of the API (see README, "HTTP API").
func (o Options) routes() map[string]http.Handler {
	routes := map[string]http.Handler{
		"/":                      fallback(editor.Handler()),
		"GET /healthz":           http.HandlerFunc(o.health),
		"GET /readyz":            http.HandlerFunc(o.ready),
		"GET /metrics":           metrics.Handler(),
		"GET /api/v1/components": http.HandlerFunc(serveComponents),
		"GET /examples/":         examples.Handler(),
	}
	s := o.Store
	if s == nil {
		return routes
	}
	chains := chainsAPI{s: s}
	run := runsAPI{s: s, heartbeat: o.Heartbeat}
	agui := aguiAPI{s: s, heartbeat: o.Heartbeat}
	oai := openaiAPI{s: s, heartbeat: o.Heartbeat, activity: !o.HideToolActivity, retries: newRetryGuard(o.RetryWindow)}
	add := func(pattern string, h http.HandlerFunc) { routes[pattern] = h }

	// Every method: POST carries messages, GET listens, DELETE ends a
	// session.
	// The guard of Handler covers /mcp; MCPHTTP adds its own for servers
	// that mount it alone.
	routes["/mcp"] = s.mcp.Endpoint()
	add("GET /api/v1/chains", chains.list)
	add("GET /api/v1/chains/{id}", chains.get)
	add("PUT /api/v1/chains/{id}", chains.put)
	add("DELETE /api/v1/chains/{id}", chains.del)
	// A draining server refuses new runs (503, Retry-After) and lets
	// the runs in flight finish; answers to paused runs still come in.
	add("POST /api/v1/chains/{id}/run", o.notWhileDraining(run.run))
	add("POST /api/v1/chains/{id}/agui", o.notWhileDraining(agui.run))
	add("GET /api/v1/runs", run.list)
	add("GET /api/v1/runs/{runId}/events", run.events)
	add("POST /api/v1/runs/{runId}/cancel", run.cancel)
	add("POST /api/v1/runs/{runId}/resume", run.resume)
	add("POST /api/v1/tools/mcp/discover", discoverAPI{s: s, timeout: o.DiscoverTimeout}.discover)
	add("POST /v1/chat/completions", o.notWhileDraining(oai.chat))
	add("GET /v1/models", oai.models)
	add("GET /v1/models/{model}", oai.model)
	sessionsAPI{s: s}.register(add)
	add("GET /api/v1/usage", usageAPI{s: s}.get)
	recordsAPI{s: s, heartbeat: o.Heartbeat}.register(add)
	if o.Keys != nil {
		keysAPI{keys: o.Keys}.register(add)
	}
	g := o.guard()
	// The live trace shows an operator every run, a user its own.
	routes["GET /api/v1/ws"] = s.live.HandlerFiltered(func(r *http.Request) bool { return g.checkOrigin(r) == nil }, s.runsOf)
	return routes
}

// fallback answers what no route matched: unknown API routes with a JSON
// 404 in their API's shape, other GETs with the editor's files.
func fallback(ui http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/"):
			notFound(w, r)
		case isOpenAIPath(r.URL.Path):
			openAINotFound(w, r)
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			ui.ServeHTTP(w, r)
		default:
			writeError(w, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path)
		}
	})
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path+" (see the API reference in README.md)")
}

func openAINotFound(w http.ResponseWriter, r *http.Request) {
	writeOpenAIError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path, "invalid_request_error", "unknown_url")
}

// runsOf is the live trace's filter for the caller of r: none for
// operators (every run), a user's own runs for a verified user.
func (s *Store) runsOf(r *http.Request) live.RunFilter {
	p := identity.From(r.Context())
	if p.Operator() {
		return nil
	}
	return func(runID string) bool {
		run, ok := s.runs.Get(runID)
		return ok && run.Info().User == p.User
	}
}
