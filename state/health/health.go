// Package health is what a replica says about itself: liveness (the
// process serves: /healthz), readiness (it should be sent work: /readyz)
// and the replica registry, each replica's heartbeat in the shared store,
// so that listings show the fleet and dead replicas are detected.
//
// Readiness is the conjunction of probes: the store is reachable, the
// replica has caught up (deployed chains), it is not draining. Liveness
// stays ok while the store is down: restarting every replica because Redis
// is down would not bring Redis back (a frozen process is what liveness is
// for, and it answers nothing).
//
// A Link is a probe that consumers keep: a subscription, a follower, a
// heartbeat marks it up or down as its connection works or fails, and it
// counts the gaps, so that /readyz says when a replica stopped consuming
// and for how long (the n8n failure: a worker silently stopped consuming
// after a network flap while its health stayed green).
package health

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Check is one probe's answer.
type Check struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Detail says what is wrong (or, when ok, what is notable).
	Detail string `json:"detail,omitempty"`
	// Since is when the current state (ok or not) began.
	Since time.Time `json:"since,omitzero"`
	// Gaps counts the times the probe went from ok to failing; LastGapMs
	// is how long the last completed gap lasted.
	Gaps      int   `json:"gaps,omitempty"`
	LastGapMs int64 `json:"lastGapMs,omitempty"`
}

// Probe answers a Check. Check must be quick (it runs on each /readyz).
type Probe interface {
	Check(ctx context.Context) Check
}

// ProbeFunc adapts a function to Probe.
type ProbeFunc func(ctx context.Context) Check

// Check implements Probe.
func (f ProbeFunc) Check(ctx context.Context) Check { return f(ctx) }

// Link is the state of a connection a consumer depends on. It starts down
// ("connecting") until its first Up.
type Link struct {
	name string

	mu        sync.Mutex
	up        bool
	since     time.Time
	gaps      int
	lastGap   time.Duration
	lastErr   string
	connected bool // was up at least once
}

// NewLink returns a link named name, down until its first Up.
func NewLink(name string) *Link { return &Link{name: name, since: time.Now(), lastErr: "connecting"} }

// Up marks the link working.
func (l *Link) Up() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.up {
		return
	}
	now := time.Now()
	if l.connected {
		l.lastGap = now.Sub(l.since)
	}
	l.up, l.connected, l.since, l.lastErr = true, true, now, ""
}

// Down marks the link failing with err.
func (l *Link) Down(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.lastErr = err.Error()
	}
	if !l.up {
		return
	}
	l.up, l.since = false, time.Now()
	l.gaps++
}

// IsUp reports whether the link works.
func (l *Link) IsUp() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.up
}

// Check implements Probe.
func (l *Link) Check(context.Context) Check {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := Check{Name: l.name, OK: l.up, Since: l.since, Gaps: l.gaps, LastGapMs: l.lastGap.Milliseconds()}
	if !l.up {
		c.Detail = fmt.Sprintf("down for %s: %s", time.Since(l.since).Round(time.Millisecond), l.lastErr)
	}
	return c
}

// Report is what /healthz and /readyz answer.
type Report struct {
	// Status is ok, unavailable (a readiness probe fails) or draining.
	Status   string  `json:"status"`
	Replica  string  `json:"replica,omitempty"`
	Draining bool    `json:"draining,omitempty"`
	Checks   []Check `json:"checks,omitempty"`
}

// OK reports whether the report says ok.
func (r Report) OK() bool { return r.Status == StatusOK }

// Report statuses.
const (
	StatusOK          = "ok"
	StatusUnavailable = "unavailable"
	StatusDraining    = "draining"
)

// Model gathers a replica's probes. It is safe for concurrent use.
type Model struct {
	replica  string
	draining atomic.Bool

	mu     sync.Mutex
	probes []entry
}

type entry struct {
	p     Probe
	ready bool
}

// NewModel returns the health of replica.
func NewModel(replica string) *Model { return &Model{replica: replica} }

// Add adds a probe: ready ones decide readiness; the others are reported
// only.
func (m *Model) Add(p Probe, ready bool) {
	m.mu.Lock()
	m.probes = append(m.probes, entry{p: p, ready: ready})
	m.mu.Unlock()
}

// Drain makes the replica unready from now on (SIGTERM): the load
// balancer stops sending it work while its runs finish or are handed over.
func (m *Model) Drain() { m.draining.Store(true) }

// Draining reports whether Drain was called.
func (m *Model) Draining() bool { return m.draining.Load() }

// Live is the liveness report: ok while the process answers, with every
// probe's state for people reading it.
func (m *Model) Live(ctx context.Context) Report {
	r := m.run(ctx)
	r.Status = StatusOK
	return r
}

// Ready is the readiness report: ok when every ready probe is ok and the
// replica is not draining.
func (m *Model) Ready(ctx context.Context) Report { return m.run(ctx) }

func (m *Model) run(ctx context.Context) Report {
	m.mu.Lock()
	probes := slices.Clone(m.probes)
	m.mu.Unlock()
	r := Report{Status: StatusOK, Replica: m.replica, Draining: m.draining.Load()}
	for _, e := range probes {
		c := e.p.Check(ctx)
		r.Checks = append(r.Checks, c)
		if e.ready && !c.OK {
			r.Status = StatusUnavailable
		}
	}
	if r.Draining {
		r.Status = StatusDraining
	}
	return r
}
