package server

import (
	"encoding/json"
	"net/http"

	"github.com/ruleagent/ruleagent/editor"
)

// extraRoutes are the routes beyond health and metrics, by pattern.
func (o Options) extraRoutes() map[string]http.Handler {
	routes := map[string]http.Handler{
		"GET /{$}": editor.Handler(),
	}
	if o.Store != nil {
		// Every method: POST carries messages, GET listens, DELETE ends a
		// session.
		routes["/mcp"] = o.Store.MCPHTTP()
		routes["GET /api/v1/chains"] = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			list := o.Store.List()
			if list == nil {
				list = []ChainInfo{}
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(list)
		})
	}
	return routes
}
