package server

import (
	"cmp"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/server/identity"
)

// Ledger is the usage ledger the store's runs are recorded in (nil: none;
// StoreOptions.Ledger).
func (s *Store) Ledger() *ledger.Ledger { return s.ledger }

// usageLedger is a run's root ledger: one that reports every call of the
// run to the store's usage ledger when there is one.
func (s *Store) usageLedger(req RunRequest) (*agent.Ledger, *ledger.Run) {
	if s.ledger == nil {
		return agent.NewLedger(nil), nil
	}
	rec := s.ledger.Run(ledger.RunInfo{RunID: req.RunID, ChainID: req.ChainID, ThreadID: req.ThreadID,
		UserID: req.Metadata["userId"], Source: cmp.Or(req.Source, "api")})
	return agent.NewRecordingLedger(rec), rec
}

// withCost puts the cost of the segment's calls on its terminal event.
func (st *runState) withCost(m *events.Meta) {
	m.Cost, m.Currency = st.usage.SegmentCost()
}

// usageAPI serves GET /api/v1/usage.
type usageAPI struct{ s *Store }

// defaultUsageSince is the range a usage query covers when it names none.
const defaultUsageSince = 30 * 24 * time.Hour

// maxUsageGroups bounds the groups of one answer unless limit says more.
const maxUsageGroups = 1000

// get answers GET /api/v1/usage?by=&since=&until=&run=&thread=&user=&chain=&model=&limit=.
func (a usageAPI) get(w http.ResponseWriter, r *http.Request) {
	l := a.s.Ledger()
	if l == nil {
		writeError(w, http.StatusServiceUnavailable, "this server keeps no usage ledger")
		return
	}
	v := r.URL.Query()
	now := time.Now()
	q := ledger.Query{Since: now.Add(-defaultUsageSince), Until: now.Add(time.Second), RunID: v.Get("run"), ThreadID: v.Get("thread"),
		UserID: v.Get("user"), ChainID: v.Get("chain"), Model: v.Get("model"), Limit: maxUsageGroups}
	for _, b := range strings.Split(v.Get("by"), ",") {
		if b = strings.TrimSpace(b); b != "" {
			q.By = append(q.By, b)
		}
	}
	var err error
	if s := v.Get("since"); s != "" {
		if q.Since, err = ledger.ParseTime(s, now); err != nil {
			writeError(w, http.StatusBadRequest, "since: "+err.Error())
			return
		}
	}
	if s := v.Get("until"); s != "" {
		if q.Until, err = ledger.ParseTime(s, now); err != nil {
			writeError(w, http.StatusBadRequest, "until: "+err.Error())
			return
		}
	}
	if s := v.Get("limit"); s != "" {
		if q.Limit, err = strconv.Atoi(s); err != nil || q.Limit < 0 {
			writeError(w, http.StatusBadRequest, "limit must be a number of groups")
			return
		}
	}
	// A verified user sees its own usage only; operators everyone's.
	if p := identity.From(r.Context()); !p.Operator() {
		if q.UserID != "" && q.UserID != p.User {
			writeError(w, http.StatusForbidden, ErrNotYours.Error()+": a caller sees only its own usage")
			return
		}
		q.UserID = p.User
	}
	if err := q.Check(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rep, err := l.Query(r.Context(), q)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
