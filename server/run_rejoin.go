package server

import (
	"errors"
	"time"

	"github.com/ruleagent/ruleagent/events"
)

// errClientLeft is what a request whose client went away returns while its
// run goes on for the rejoin grace.
var errClientLeft = errors.New("the client went away: the run goes on for it to rejoin")

// errNobodyRejoined cancels a run whose client went away and that nobody
// followed within the rejoin grace.
var errNobodyRejoined = errors.New("the client went away and nobody rejoined the run in time")

// leave takes a client that went away off segment seg, and reports whether
// the run goes on without it: a run that keeps a log and whose client can
// rejoin (RunRequest.Rejoinable) goes on for the rejoin grace, and is
// cancelled then unless someone follows it (its log, from any replica) or
// it has paused or ended meanwhile.
func (st *runState) leave(seg *segment) bool {
	rl := st.s.rl
	if st.lg == nil || !st.req.Rejoinable || rl.RejoinGrace < 0 {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	lg := st.lg
	if lg.ended || st.seg != seg {
		// The segment is over (the run ended or paused): nothing to keep.
		return true
	}
	seg.client = events.Discard
	lg.left = true
	lg.followedUntil = time.Now().Add(rl.RejoinGrace)
	if lg.timer == nil {
		lg.timer = time.AfterFunc(rl.RejoinGrace, st.orphaned)
	} else {
		lg.timer.Reset(rl.RejoinGrace)
	}
	return true
}

// orphaned runs when the rejoin grace of a run whose client left is over:
// it is cancelled unless a follower kept it (the grace starts again from
// the follower's last sign), a client attached, or it paused or ended.
func (st *runState) orphaned() {
	st.mu.Lock()
	lg := st.lg
	seg := st.seg
	if lg.ended || !lg.left || seg == nil {
		st.mu.Unlock()
		return
	}
	if d := time.Until(lg.followedUntil); d > 0 {
		lg.timer.Reset(d)
		st.mu.Unlock()
		return
	}
	st.mu.Unlock()
	st.s.log.Info("run cancelled: its client went away and nobody rejoined it", "run", st.req.RunID,
		"grace", st.s.rl.RejoinGrace)
	st.reg.Cancel(errNobodyRejoined)
	if !st.run.Stop(errNobodyRejoined) {
		// A node ignores cancellation: the run's log ends now, cancelled,
		// as a client's stream would.
		msg := "the run was cancelled: " + errNobodyRejoined.Error()
		st.detach(seg, usageSince(st.ledger.Entries(), seg.base))
		st.s.log.Warn(msg, "run", st.req.RunID, "err", "a node ignores cancellation")
	}
}

// followed keeps a run whose client left going for another rejoin grace:
// someone follows its log.
func (st *runState) followed() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if lg := st.lg; lg != nil && lg.left {
		if until := time.Now().Add(st.s.rl.RejoinGrace); until.After(lg.followedUntil) {
			lg.followedUntil = until
		}
	}
}

// attached marks a run whose client left as having a client again.
func (st *runState) attachedLocked() {
	if lg := st.lg; lg != nil {
		lg.left = false
	}
}
