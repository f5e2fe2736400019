package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/sessions"
)

// sessionSource is where `ruleagent sessions` reads and changes sessions:
// a running server's API, or the store itself when no server holds it.
type sessionSource interface {
	list(ctx context.Context, f sessions.Filter) ([]sessions.Info, error)
	get(ctx context.Context, id string) (*sessions.Record, error)
	remove(ctx context.Context, id string) error
	setModel(ctx context.Context, id, name string) (sessions.Info, error)
	close()
}

// storeSource works on the store directly. Model names are checked against
// the chain files of the chains folder, as the server checks its deployed
// chains.
type storeSource struct {
	st     sessions.Store
	chains string
}

func (s storeSource) list(ctx context.Context, f sessions.Filter) ([]sessions.Info, error) {
	return s.st.List(ctx, f)
}

func (s storeSource) get(ctx context.Context, id string) (*sessions.Record, error) {
	return s.st.Get(ctx, id)
}

func (s storeSource) remove(ctx context.Context, id string) error {
	return sessions.Remove(ctx, s.st, id)
}

func (s storeSource) setModel(ctx context.Context, id, name string) (sessions.Info, error) {
	key, err := sessions.ParseID(id)
	if err != nil {
		return sessions.Info{}, err
	}
	var dsls [][]byte
	files, _ := filepath.Glob(filepath.Join(s.chains, "*.json"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			dsls = append(dsls, b)
		}
	}
	ag, name, err := components.ResolveSessionModel(dsls, key, name)
	if err != nil {
		return sessions.Info{}, fmt.Errorf("%w (chains read from %s)", err, s.chains)
	}
	rec, err := sessions.SetModel(ctx, s.st, key, name, ag.Config.TTL, "")
	if err != nil {
		return sessions.Info{}, err
	}
	return rec.Info(), nil
}

func (s storeSource) close() { s.st.Close() }

// apiSource works through a server's /api/v1/sessions routes.
type apiSource struct {
	base  string
	token string
	hc    *http.Client
}

func (a apiSource) do(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("the server at %s: %w", a.base, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s", sessions.ErrNotFound, apiMessage(b))
	case resp.StatusCode == http.StatusConflict:
		return fmt.Errorf("%w: %s", sessions.ErrBusy, apiMessage(b))
	case resp.StatusCode >= 300:
		return fmt.Errorf("the server answered %d: %s", resp.StatusCode, apiMessage(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func apiMessage(b []byte) string {
	var e struct{ Error string }
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(string(b))
}

func sessionPath(id string) string { return "/api/v1/sessions/" + url.PathEscape(id) }

func (a apiSource) list(ctx context.Context, f sessions.Filter) ([]sessions.Info, error) {
	q := url.Values{}
	for k, v := range map[string]string{"agent": f.Agent, "user": f.UserID, "thread": f.ThreadID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out struct{ Sessions []sessions.Info }
	err := a.do(ctx, "GET", "/api/v1/sessions?"+q.Encode(), nil, &out)
	return out.Sessions, err
}

func (a apiSource) get(ctx context.Context, id string) (*sessions.Record, error) {
	var rec sessions.Record
	if err := a.do(ctx, "GET", sessionPath(id), nil, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

func (a apiSource) remove(ctx context.Context, id string) error {
	return a.do(ctx, "DELETE", sessionPath(id), nil, nil)
}

func (a apiSource) setModel(ctx context.Context, id, name string) (sessions.Info, error) {
	var info sessions.Info
	err := a.do(ctx, "PUT", sessionPath(id)+"/model", map[string]string{"model": name}, &info)
	return info, err
}

func (a apiSource) close() {}

// openSessionSource picks the source the flags name: --server, else the
// store of --session-store under --data.
func openSessionSource(ctx context.Context, server, token, spec, data, chains string) (sessionSource, error) {
	if server != "" {
		if !strings.Contains(server, "://") {
			server = "http://" + server
		}
		return apiSource{base: strings.TrimRight(server, "/"), token: token, hc: &http.Client{Timeout: time.Minute}}, nil
	}
	st, err := sessions.Open(ctx, spec, data)
	if errors.Is(err, sessions.ErrLocked) {
		return nil, fmt.Errorf("%w\n(a server holds the store: add --server http://ADDR, e.g. --server 127.0.0.1:8080)", err)
	}
	if err != nil {
		return nil, err
	}
	return storeSource{st: st, chains: chains}, nil
}
