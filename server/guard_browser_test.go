package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// browserReport is what testdata/browser_guard.mjs saw.
type browserReport struct {
	CrossSite struct {
		Network []browserResponse `json:"network"`
		Page    map[string]string `json:"page"`
	} `json:"crossSite"`
	Rebound struct {
		Network []browserResponse `json:"network"`
		Page    map[string]any    `json:"page"`
	} `json:"rebound"`
	SameOrigin browserResponse `json:"sameOrigin"`
}

type browserResponse struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// A real browser page cannot drive a local server: headless Chromium loads
// a page from another loopback port that posts text/plain, typeless and
// form bodies and opens the WebSocket, and a page on a rebound name
// (rebound.test -> 127.0.0.1) that calls the API as its own origin. Every
// request that reaches the server is refused with the reason, nothing runs
// or deploys, while the server's own origin still starts a run.
func TestBrowserRefusesCrossSiteAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	chromium, err := exec.LookPath("chromium")
	needBrowser(t, err == nil, "chromium is not installed: apt-get install -y --no-install-recommends chromium")
	editorDir, _ := filepath.Abs(filepath.Join(repoRoot, "editor"))
	_, err = os.Stat(filepath.Join(editorDir, "node_modules", "playwright-core", "package.json"))
	needBrowser(t, err == nil, "playwright-core is missing: npm ci --prefix editor")
	_, err = exec.LookPath("node")
	needBrowser(t, err == nil, "node is not installed")

	e := guardEnv(t, Options{}, StoreOptions{})
	// What reached the server, and its answer: a page cannot read a
	// cross-origin answer, and the browser hides some from its own
	// network layer (opaque-response blocking).
	seen := &seenRequests{}
	e.base = serveLoopback(t, seen.wrap(Handler(e.opts)))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "browser_guard.mjs"))
	cmd.Env = append(os.Environ(), "VICTIM="+e.base, "CHROMIUM="+chromium, "EDITOR_DIR="+editorDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("browser_guard.mjs: %v\n%s\n%s", err, out, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var rep browserReport
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}

	// The page of another origin: each of its requests that reached the
	// server was refused; those needing a preflight never got past it.
	attacker := seen.from(func(o string) bool { return strings.HasPrefix(o, "http://127.0.0.1:") && o != e.base })
	byPath := map[string][]seenRequest{}
	for _, r := range attacker {
		byPath[r.method+" "+r.path] = append(byPath[r.method+" "+r.path], r)
	}
	for want, n := range map[string]int{
		// no-cors fetch and text/plain form; typeless fetch; no-cors fetch and urlencoded form
		"POST /api/v1/chains/chat/run": 2, "POST /api/v1/chains/chat/agui": 1, "POST /v1/chat/completions": 2, "GET /api/v1/ws": 1,
	} {
		if got := byPath[want]; len(got) != n {
			t.Errorf("cross-site %s reached the server %d times, want %d: %+v", want, len(got), n, attacker)
		}
		for _, r := range byPath[want] {
			if r.status != 403 {
				t.Errorf("cross-site %s (%s): %d, want 403", want, r.contentType, r.status)
			}
		}
	}
	for _, r := range attacker {
		if r.method == "PUT" || r.method == "POST" && r.contentType == "application/json" {
			t.Errorf("a cross-site request that needs a preflight reached the server: %+v", r)
		}
	}
	if p := rep.CrossSite.Page; p["webSocket"] != "error" || !strings.HasPrefix(p["corsJSON"], "rejected") || !strings.HasPrefix(p["corsPut"], "rejected") {
		t.Errorf("what the cross-site page saw: %v", p)
	}

	// The rebound page reads and changes nothing, and is told why.
	for _, name := range []string{"list", "deploy", "run", "chat"} {
		r, _ := rep.Rebound.Page[name].(map[string]any)
		if status, _ := r["status"].(float64); status != 403 || !strings.Contains(r["body"].(string), "rebound.test") {
			t.Errorf("rebound page, %s: %v", name, r)
		}
	}
	if ws := rep.Rebound.Page["webSocket"]; ws != "error" {
		t.Errorf("rebound page, WebSocket: %v", ws)
	}
	rebound := seen.from(func(o string) bool { return strings.HasPrefix(o, "http://rebound.test:") })
	ws := 0
	for _, r := range rebound {
		if r.status != 403 {
			t.Errorf("rebound %s %s: %d", r.method, r.path, r.status)
		}
		if r.path == "/api/v1/ws" {
			ws++
		}
	}
	if ws != 1 {
		t.Errorf("the rebound WebSocket reached the server %d times, want 1", ws)
	}

	// Nothing ran or deployed, but the server's own origin did start a run.
	if rep.SameOrigin.Status != 200 || !strings.Contains(rep.SameOrigin.Body, `"outcome":"success"`) {
		t.Errorf("the same-origin control run: %+v", rep.SameOrigin)
	}
	for _, r := range e.llm.Requests() {
		if strings.Contains(r.LastUserText(), "pwned") {
			t.Errorf("an attack reached the LLM: %q", r.LastUserText())
		}
	}
	if t.Failed() {
		t.Logf("the browser's network layer saw: %+v\nthe rebound page: %+v", rep.CrossSite.Network, rep.Rebound.Network)
	}
	if n := len(e.llm.Requests()); n != 1 {
		t.Errorf("%d LLM requests, want the control's one", n)
	}
	if _, ok := e.store.Engine("pwned"); ok {
		t.Error("a page deployed a chain")
	}
}

// seenRequests records the requests a server answered.
type seenRequests struct {
	mu   sync.Mutex
	list []seenRequest
}

type seenRequest struct {
	method, path, origin, contentType string
	status                            int
}

func (s *seenRequests) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		s.mu.Lock()
		s.list = append(s.list, seenRequest{method: r.Method, path: r.URL.Path, origin: r.Header.Get("Origin"),
			contentType: r.Header.Get("Content-Type"), status: sw.status()})
		s.mu.Unlock()
	})
}

// from returns the requests whose Origin origin selects.
func (s *seenRequests) from(origin func(string) bool) []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []seenRequest
	for _, r := range s.list {
		if origin(r.origin) {
			out = append(out, r)
		}
	}
	return out
}

// needBrowser skips a browser test whose tools are missing, or fails it
// under CI, which installs them.
func needBrowser(t *testing.T, ok bool, msg string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
