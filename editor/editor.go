// Package editor serves ruleagent's web UI, embedded in the binary. This
// release ships the start page: what is deployed, and where the APIs are.
// The drag-and-drop editor (React Flow, built with Vite into dist/) replaces
// it in the next release, behind the same Handler.
package editor

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed dist
var dist embed.FS

// Handler serves the UI's files.
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return http.FileServerFS(sub)
}
