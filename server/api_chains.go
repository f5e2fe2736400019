package server

import (
	"errors"
	"net/http"
)

// chainsAPI serves /api/v1/chains and /api/v1/chains/{id}.
type chainsAPI struct{ s *Store }

// list answers GET /api/v1/chains: every deployed chain, then the chain
// files that failed to load and have no running version (deployed false).
func (a chainsAPI) list(w http.ResponseWriter, _ *http.Request) {
	list := a.s.List()
	if list == nil {
		list = []ChainInfo{}
	}
	files := map[string]bool{}
	for i := range list {
		list[i].Deployed = true
		files[list[i].File] = true
	}
	for path, msg := range a.s.Broken() {
		if !files[path] {
			list = append(list, ChainInfo{ID: chainIDOfFile(path), File: path, Error: msg})
		}
	}
	// In a fleet: the store's chains that do not run here.
	list = append(list, a.s.fleetOnly()...)
	writeJSON(w, http.StatusOK, list)
}

// get answers GET /api/v1/chains/{id} with the chain's DSL as deployed.
func (a chainsAPI) get(w http.ResponseWriter, r *http.Request) {
	dsl, ok := a.s.DSL(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, "no chain "+quote(r.PathValue("id"))+" is deployed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(dsl)
}

// put answers PUT /api/v1/chains/{id}: validate, deploy, save.
func (a chainsAPI) put(w http.ResponseWriter, r *http.Request) {
	if !operatorOnly(w, r, "deploying a chain") {
		return
	}
	id := r.PathValue("id")
	if !fileSafeID(id) {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "invalid chain id " + quote(id),
			Problems: []Problem{{Path: "ruleChain.id", Message: "use letters, digits, '-', '_' and '.', with no leading dot (at most 128 characters)"}}})
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	info, err := a.s.Save(id, body)
	var inv *InvalidChainError
	switch {
	case errors.Is(err, ErrReadOnly):
		writeError(w, http.StatusForbidden, err.Error())
		return
	case errors.As(err, &inv):
		writeJSON(w, http.StatusBadRequest, apiError{Error: "chain " + quote(inv.ID) + " is invalid", Problems: inv.Problems, Warnings: inv.Warnings})
		return
	case errors.Is(err, ErrChainStore):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	case err != nil:
		// The chain runs, but its file could not be written.
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	info.Deployed = true
	writeJSON(w, http.StatusOK, info)
}

// del answers DELETE /api/v1/chains/{id}.
func (a chainsAPI) del(w http.ResponseWriter, r *http.Request) {
	if !operatorOnly(w, r, "deleting a chain") {
		return
	}
	err := a.s.Delete(r.PathValue("id"))
	switch {
	case errors.Is(err, ErrReadOnly):
		writeError(w, http.StatusForbidden, err.Error())
	case errors.Is(err, ErrNoChain):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, ErrChainStore):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}
