package server

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/sessions"
)

// identify knows the caller of every route but /healthz by its verified
// identity (Options.Identity), unless auth already knew it as the
// operator: a request that does not verify gets 401, saying why. The
// routes then bind what the caller does to that identity: the user id of
// its runs (a body naming another user gets 403), and the runs it may
// see, cancel and answer.
func (o Options) identify(next http.Handler) http.Handler {
	if o.Identity == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isProbe(r) || r.Method == http.MethodOptions || isEditorPage(r) || identity.From(r.Context()).Method == identity.MethodToken {
			next.ServeHTTP(w, r)
			return
		}
		p, err := o.Identity.Verify(r, bearerOf(r))
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ruleagent"`)
			if isOpenAIPath(r.URL.Path) {
				writeOpenAIError(w, http.StatusUnauthorized, err.Error(), "invalid_request_error", "invalid_api_key")
				return
			}
			writeError(w, http.StatusUnauthorized, err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(identity.With(r.Context(), p)))
	})
}

// bearerOf is the credential a request presents: the Authorization
// header's bearer token, or for the WebSocket (whose browser API sets no
// headers) its subprotocol or ?token= parameter (wsCredential).
func bearerOf(r *http.Request) string {
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(t)
	}
	cred, _ := wsCredential(r)
	return cred
}

// operatorOnly answers 403 unless the caller administers the server: the
// operator's --token, a credential granted the operator role, or any
// caller of a server that verifies nobody (identity.Principal.Operator).
// what names the refused action. It reports whether the request may go
// on.
func operatorOnly(w http.ResponseWriter, r *http.Request, what string) bool {
	err := identity.RequireOperator(identity.From(r.Context()), what)
	if err == nil {
		return true
	}
	if isOpenAIPath(r.URL.Path) {
		writeOpenAIError(w, http.StatusForbidden, err.Error(), "invalid_request_error", "operator_only")
		return false
	}
	writeError(w, http.StatusForbidden, err.Error())
	return false
}

// keysAPI serves /api/v1/keys: operators (the --token, a credential
// granted the operator role) create, list and revoke per-user API keys of
// a running server (ruleagent keys --server). Nobody else may: a key
// minted by a user could name any user.
type keysAPI struct{ keys sessions.KeyStore }

func (a keysAPI) register(add func(string, http.HandlerFunc)) {
	add("GET /api/v1/keys", a.operator(a.list))
	add("POST /api/v1/keys", a.operator(a.create))
	add("DELETE /api/v1/keys/{id}", a.operator(a.revoke))
}

func (a keysAPI) operator(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if operatorOnly(w, r, "managing API keys") {
			h(w, r)
		}
	}
}

// keyEntry is a key in lists: never its hash.
type keyEntry struct {
	ID       string    `json:"id"`
	User     string    `json:"user"`
	Name     string    `json:"name,omitempty"`
	Role     string    `json:"role,omitempty"`
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires,omitzero"`
	LastUsed time.Time `json:"lastUsed,omitzero"`
}

func entryOf(k sessions.APIKey) keyEntry {
	return keyEntry{ID: k.ID, User: k.User, Name: k.Name, Role: k.Role, Created: k.Created, Expires: k.Expires, LastUsed: k.LastUsed}
}

func (a keysAPI) list(w http.ResponseWriter, r *http.Request) {
	keys, err := a.keys.ListKeys(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	out := make([]keyEntry, 0, len(keys))
	for _, k := range keys {
		out = append(out, entryOf(k))
	}
	writeJSON(w, http.StatusOK, out)
}

// create answers POST /api/v1/keys {"user", "name", "role", "expires"}
// with the new key: the only time it is shown.
func (a keysAPI) create(w http.ResponseWriter, r *http.Request) {
	var body struct {
		User    string    `json:"user"`
		Name    string    `json:"name"`
		Role    string    `json:"role"`
		Expires time.Time `json:"expires"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	key, rec, err := identity.IssueKey(identity.KeySpec{User: body.User, Name: body.Name, Role: body.Role, Expires: body.Expires}, time.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := a.keys.PutKey(r.Context(), rec); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, struct {
		keyEntry
		Key string `json:"key"`
	}{entryOf(rec), key})
}

func (a keysAPI) revoke(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	err := a.keys.DeleteKey(r.Context(), id)
	switch {
	case errors.Is(err, sessions.ErrNoKey):
		writeError(w, http.StatusNotFound, "no API key "+quote(id))
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "revoked": true})
	}
}

// unknownToCaller is an answer about another caller's run, worded and
// answered as the same answer about an id that never existed (so that it
// does not tell the id exists), and marked ErrNotYours for errors.Is.
type unknownToCaller struct{ err error }

// asUnknown marks err, an answer about an unknown id, as the answer to a
// caller about another caller's id.
func asUnknown(err error) error { return unknownToCaller{err} }

func (e unknownToCaller) Error() string   { return e.err.Error() }
func (e unknownToCaller) Unwrap() []error { return []error{e.err, ErrNotYours} }
