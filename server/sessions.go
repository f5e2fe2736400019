package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/sessions"
)

// Sessions is the session store the store's chains run with (registered
// in their configuration with components.RegisterSessions), or nil.
func (s *Store) Sessions() sessions.Store { return components.SessionStore(s.cfg) }

// sessionsAPI serves the /api/v1/sessions routes.
type sessionsAPI struct{ s *Store }

// register adds the session routes.
func (a sessionsAPI) register(add func(string, http.HandlerFunc)) {
	add("GET /api/v1/sessions", a.list)
	add("GET /api/v1/sessions/{id}", a.get)
	add("GET /api/v1/sessions/{id}/export", a.export)
	add("DELETE /api/v1/sessions/{id}", a.del)
	add("PUT /api/v1/sessions/{id}/model", a.setModel)
}

// store returns the session store, answering 503 when there is none.
func (a sessionsAPI) store(w http.ResponseWriter) sessions.Store {
	st := a.s.Sessions()
	if st == nil {
		writeError(w, http.StatusServiceUnavailable, "this server keeps no sessions (no session store is configured)")
	}
	return st
}

// list answers GET /api/v1/sessions?agent=&user=&thread=&limit=.
func (a sessionsAPI) list(w http.ResponseWriter, r *http.Request) {
	st := a.store(w)
	if st == nil {
		return
	}
	q := r.URL.Query()
	f := sessions.Filter{Agent: q.Get("agent"), UserID: q.Get("user"), ThreadID: q.Get("thread")}
	// A verified user lists its own sessions only; operators every one.
	if p := identity.From(r.Context()); !p.Operator() {
		if f.UserID != "" && f.UserID != p.User {
			writeError(w, http.StatusForbidden, ErrNotYours.Error()+": a caller lists only its own sessions")
			return
		}
		f.Caller = p.User
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "limit must be a number of sessions")
			return
		}
		f.Limit = n
	}
	list, err := st.List(r.Context(), f)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if list == nil {
		list = []sessions.Info{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": list})
}

// read reads the session the path names, answering the error itself.
func (a sessionsAPI) read(w http.ResponseWriter, r *http.Request) (*sessions.Record, bool) {
	st := a.store(w)
	if st == nil {
		return nil, false
	}
	id := r.PathValue("id")
	if !mayTouchSession(w, r, st, id) {
		return nil, false
	}
	rec, err := st.Get(r.Context(), id)
	if err != nil {
		sessionError(w, id, err)
		return nil, false
	}
	return rec, true
}

// get answers GET /api/v1/sessions/{id}: the whole session.
func (a sessionsAPI) get(w http.ResponseWriter, r *http.Request) {
	if rec, ok := a.read(w, r); ok {
		writeJSON(w, http.StatusOK, rec)
	}
}

// SessionExportFormat names the export's JSON format.
const SessionExportFormat = "ruleagent.session.v1"

// export answers GET /api/v1/sessions/{id}/export: the session as a JSON
// file to keep.
func (a sessionsAPI) export(w http.ResponseWriter, r *http.Request) {
	rec, ok := a.read(w, r)
	if !ok {
		return
	}
	name := strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			return c
		}
		return '_'
	}, rec.ID)
	w.Header().Set("Content-Disposition", `attachment; filename="session-`+name+`.json"`)
	writeJSON(w, http.StatusOK, map[string]any{"format": SessionExportFormat, "exportedAt": time.Now().UTC(), "session": rec})
}

// writable answers 403 on a read-only server, whose API changes sessions
// only through runs (which keep writing theirs).
func (a sessionsAPI) writable(w http.ResponseWriter, id string) bool {
	if !a.s.readOnly {
		return true
	}
	err := fmt.Errorf("%w: session %s changes only through its runs", ErrReadOnly, quote(id))
	writeError(w, http.StatusForbidden, err.Error())
	return false
}

// del answers DELETE /api/v1/sessions/{id}.
func (a sessionsAPI) del(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !a.writable(w, id) {
		return
	}
	st := a.store(w)
	if st == nil {
		return
	}
	if !mayTouchSession(w, r, st, id) {
		return
	}
	if err := sessions.Remove(r.Context(), st, id); err != nil {
		sessionError(w, id, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// setModel answers PUT /api/v1/sessions/{id}/model with {"model": NAME}:
// the session runs on that allowedModels entry of its agent from its next
// run on ("" or "default": the agent's own model). The session is created
// when it does not exist yet.
func (a sessionsAPI) setModel(w http.ResponseWriter, r *http.Request) {
	if !a.writable(w, r.PathValue("id")) {
		return
	}
	st := a.store(w)
	if st == nil {
		return
	}
	var body struct {
		Model *string `json:"model"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if body.Model == nil {
		writeError(w, http.StatusBadRequest, `the body needs "model": the name of an allowedModels entry, or "default"`)
		return
	}
	id := r.PathValue("id")
	if !mayTouchSession(w, r, st, id) {
		return
	}
	key, err := sessions.ParseID(id)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ag, name, err := components.ResolveSessionModel(a.s.deployedDSLs(), key, *body.Model)
	switch {
	case errors.Is(err, components.ErrNoSessionAgent):
		writeError(w, http.StatusNotFound, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	// A verified user's new thread session is theirs; operators change
	// any and bind none.
	owner := ""
	if p := identity.From(r.Context()); !p.Operator() {
		owner = p.User
	}
	rec, err := sessions.SetModel(r.Context(), st, key, name, ag.Config.TTL, owner)
	if err != nil {
		sessionError(w, id, err)
		return
	}
	writeJSON(w, http.StatusOK, rec.Info())
}

// deployedDSLs are the deployed chains' definitions.
func (s *Store) deployedDSLs() [][]byte {
	var out [][]byte
	for _, c := range s.List() {
		if dsl, ok := s.DSL(c.ID); ok {
			out = append(out, dsl)
		}
	}
	return out
}

// mayTouchSession reports whether the caller may read or change session
// id, answering as for an unknown session (404) when not: a verified user only its own sessions (a
// user or user_thread scope with its user id, a thread it started, or a
// thread session that does not exist yet), operators and unverified
// callers every one.
func mayTouchSession(w http.ResponseWriter, r *http.Request, st sessions.Store, id string) bool {
	p := identity.From(r.Context())
	if p.Operator() {
		return true
	}
	k, err := sessions.ParseID(id)
	if err == nil && k.User == p.User {
		return true
	}
	if err == nil && k.Scope == sessions.ScopeThread {
		rec, err := st.Get(r.Context(), id)
		if errors.Is(err, sessions.ErrNotFound) || err == nil && rec.Belongs(p.User) {
			return true
		}
	}
	// Another user's session is as unknown as one that never was.
	sessionError(w, id, sessions.ErrNotFound)
	return false
}

// sessionError answers a session store error.
func sessionError(w http.ResponseWriter, id string, err error) {
	switch {
	case errors.Is(err, sessions.ErrNotFound) || errors.Is(err, sessions.ErrNotYours):
		// Another user's session is as unknown as one that never was.
		writeError(w, http.StatusNotFound, "no session "+quote(id)+" (it may have expired)")
	case errors.Is(err, sessions.ErrBusy):
		writeError(w, http.StatusConflict, "session "+quote(id)+": "+err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "session "+quote(id)+": "+err.Error())
	}
}
