package server

import "net/http"

// extraRoutes are the routes beyond health and metrics, by pattern.
func (o Options) extraRoutes() map[string]http.Handler {
	routes := map[string]http.Handler{}
	if o.Store != nil {
		// Every method: POST carries messages, GET listens, DELETE ends a
		// session.
		routes["/mcp"] = o.Store.MCPHTTP()
	}
	return routes
}
