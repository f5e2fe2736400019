package server

import "net/http"

// extraRoutes are the routes beyond health and metrics, by pattern.
func (o Options) extraRoutes() map[string]http.Handler {
	return map[string]http.Handler{}
}
