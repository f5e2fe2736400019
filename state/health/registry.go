package health

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"time"
)

// Replica is a registered replica.
type Replica struct {
	ID string `json:"id"`
	// Addr is where it serves (for people and for direct routing).
	Addr     string    `json:"addr,omitempty"`
	Started  time.Time `json:"started"`
	Version  string    `json:"version,omitempty"`
	Draining bool      `json:"draining,omitempty"`
	// Seen is its last heartbeat; Alive is false once its heartbeat lease
	// expired (it died, or cannot reach the store).
	Seen  time.Time `json:"seen"`
	Alive bool      `json:"alive"`
}

// Registry is the set of replicas of a fleet. Join starts the replica's
// heartbeat (a lease renewed every TTL/3); a replica whose heartbeat stops
// is not Alive after TTL, and other replicas may then take over its runs
// and claim its paused runs' checkpoints.
type Registry interface {
	// Join registers self and keeps its heartbeat until Leave.
	Join(ctx context.Context, self Replica) error
	// SetDraining marks self draining in its next heartbeat.
	SetDraining(draining bool)
	// Leave removes self at once (a clean shutdown) and stops the heartbeat.
	Leave(ctx context.Context) error
	// List returns the replicas known, alive ones and those dead for less
	// than an hour, by id.
	List(ctx context.Context) ([]Replica, error)
	// Alive reports whether replica id's heartbeat is current.
	Alive(ctx context.Context, id string) (bool, error)
	// Probe is the heartbeat's link (ok while it is renewed).
	Probe() Probe
}

// NewReplicaID returns a replica id: the host name and a random suffix,
// new for each process start (a restarted replica is a new replica).
func NewReplicaID() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r == ':' || r == ' ' {
			return '-'
		}
		return r
	}, host)
	if host == "" {
		host = "replica"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// Local is the registry of one machine: the replica itself.
type Local struct {
	link *Link
	mu   sync.Mutex
	self Replica
}

// NewLocal returns the registry of a single replica.
func NewLocal() *Local { return &Local{link: NewLink("replica registry")} }

// Join implements Registry.
func (l *Local) Join(_ context.Context, self Replica) error {
	self.Alive, self.Seen = true, time.Now()
	if self.Started.IsZero() {
		self.Started = self.Seen
	}
	l.mu.Lock()
	l.self = self
	l.mu.Unlock()
	l.link.Up()
	return nil
}

// SetDraining implements Registry.
func (l *Local) SetDraining(d bool) {
	l.mu.Lock()
	l.self.Draining = d
	l.mu.Unlock()
}

// Leave implements Registry.
func (l *Local) Leave(context.Context) error {
	l.mu.Lock()
	l.self = Replica{}
	l.mu.Unlock()
	l.link.Down(nil)
	return nil
}

// List implements Registry.
func (l *Local) List(context.Context) ([]Replica, error) {
	l.mu.Lock()
	r := l.self
	l.mu.Unlock()
	if r.ID == "" {
		return nil, nil
	}
	r.Seen = time.Now()
	return []Replica{r}, nil
}

// Alive implements Registry: only the replica itself is.
func (l *Local) Alive(_ context.Context, id string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return id != "" && id == l.self.ID, nil
}

// Probe implements Registry.
func (l *Local) Probe() Probe { return l.link }
