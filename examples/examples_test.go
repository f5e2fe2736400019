package examples

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h := Handler()
	for _, tc := range []struct {
		path, contentType, body string
		status                  int
	}{
		{"/examples/", "text/html", "frontend-tools.html", 200},
		{"/examples/frontend-tools.html", "text/html", `<script type="module" src="frontend-tools.js">`, 200},
		{"/examples/agui-client.js", "text/javascript", "export class AgentClient", 200},
		{"/examples/style.css", "text/css", "body", 200},
		{"/examples/nope.html", "", "", 404},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != tc.status || !strings.HasPrefix(rec.Header().Get("Content-Type"), tc.contentType) || !strings.Contains(string(body), tc.body) {
			t.Errorf("%s: %d %q %.80q", tc.path, rec.Code, rec.Header().Get("Content-Type"), body)
		}
		// The pages may load and call their own origin only: no CDN.
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'self';") {
			t.Errorf("%s: CSP %q", tc.path, csp)
		}
	}
}
