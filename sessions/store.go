package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/events"
)

// Header is what a session is, without its content: its list entry.
type Header struct {
	ID     string `json:"id"`
	Agent  string `json:"agent"`
	Scope  Scope  `json:"scope"`
	UserID string `json:"userId,omitempty"`
	// ThreadID is empty unless the scope is thread or user_thread.
	ThreadID string `json:"threadId,omitempty"`
	// Owner is the verified user who started a thread-scoped session
	// (see Run.Owner): only they continue or change it. Empty when an
	// unverified caller or the operator's token started it, and for
	// other scopes (a user scope's key holds its user).
	Owner string `json:"owner,omitempty"`
	// ChainID is the chain of the agent node that last ran the session.
	ChainID string `json:"chainId,omitempty"`
	// Model names the agent's allowedModels entry the session runs on;
	// empty for the agent's own model.
	Model string `json:"model,omitempty"`
	// Turns counts the runs kept.
	Turns   int       `json:"turns"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Expires is when the idle session goes away (zero: never).
	Expires time.Time `json:"expires,omitzero"`
}

// Record is a stored session.
type Record struct {
	Header
	NodeID string `json:"nodeId,omitempty"`
	// Summary is what compaction made of the turns before Messages.
	Summary string `json:"summary,omitempty"`
	// Messages is the history, in order: user messages, assistant messages
	// with their text, reasoning and tool calls, tool results.
	Messages    []events.Message `json:"messages"`
	Compactions []Compaction     `json:"compactions,omitempty"`
	// Version counts the writes; Put refuses a record whose version is not
	// the stored one (see Store).
	Version int64 `json:"version"`

	// lease, when set, fences Put: the write happens only while the lease
	// is still held (see Store).
	lease Lease
}

// Fence makes the record's writes conditional on l: Put refuses it with
// ErrLeaseLost once l has ended, even if its holder has not noticed (a
// frozen process, a lost network). Conversations fence their writes with
// the lease they hold.
func (r *Record) Fence(l Lease) { r.lease = l }

// Compaction records one compaction of a session's oldest turns.
type Compaction struct {
	At    time.Time `json:"at"`
	RunID string    `json:"runId,omitempty"`
	// Messages and Turns are what was summarised.
	Messages int `json:"messages"`
	Turns    int `json:"turns"`
	// TokensBefore and TokensAfter are the history's estimated size.
	TokensBefore int    `json:"tokensBefore"`
	TokensAfter  int    `json:"tokensAfter"`
	Summary      string `json:"summary"`
}

// maxCompactions is how many compaction records a session keeps.
const maxCompactions = 20

// Info is a session in a list: its header and how much it holds.
type Info struct {
	Header
	Messages    int `json:"messages"`
	Compactions int `json:"compactions"`
}

// Info returns the record's list entry.
func (r *Record) Info() Info {
	return Info{Header: r.Header, Messages: len(r.Messages), Compactions: len(r.Compactions)}
}

// Key returns the record's session key.
func (r *Record) Key() Key {
	return Key{Agent: r.Agent, Scope: r.Scope, User: r.UserID, Thread: r.ThreadID}
}

// NewRecord returns an empty session for key.
func NewRecord(k Key) *Record {
	return &Record{Header: Header{ID: k.ID(), Agent: k.Agent, Scope: k.Scope, UserID: k.User, ThreadID: k.Thread},
		Messages: []events.Message{}}
}

// next returns the record as its next version will be stored, encoded.
func (r *Record) next() (*Record, []byte, error) {
	n := *r
	n.Version++
	b, err := encode(&n)
	return &n, b, err
}

// Filter selects sessions in List. Empty fields match anything.
type Filter struct {
	Agent    string
	UserID   string
	ThreadID string
	// Caller, when set, keeps the sessions that are this verified user's
	// (Header.Belongs).
	Caller string
	// Limit caps the answer (0: no cap); the most recently updated come
	// first.
	Limit int
}

func (f Filter) match(i *Info) bool {
	return (f.Agent == "" || f.Agent == i.Agent) && (f.UserID == "" || f.UserID == i.UserID) &&
		(f.ThreadID == "" || f.ThreadID == i.ThreadID) && (f.Caller == "" || i.Belongs(f.Caller))
}

// Belongs reports whether the session is verified user's own: its key
// holds user (the user and user_thread scopes), or user started its
// thread (the thread scope; see Owner).
func (h Header) Belongs(user string) bool {
	return user != "" && (h.UserID == user || h.Scope == ScopeThread && h.Owner == user)
}

// ErrNotYours refuses a verified user a thread another caller started.
var ErrNotYours = errors.New("the thread was started by another user: a verified caller continues only its own threads")

// checkOwner refuses caller, a verified user ("" for the operator's token
// or an unverified caller, who may continue every thread), a thread
// session it did not start.
func (r *Record) checkOwner(caller string) error {
	if r.Scope != ScopeThread || caller == "" || r.Owner == caller {
		return nil
	}
	return fmt.Errorf("session %s: %w", r.ID, ErrNotYours)
}

// Store keeps session records. Implementations are safe for concurrent
// use.
//
// Put is a compare-and-swap on Version: it writes the record only if the
// stored version is rec.Version (0 for a session that does not exist or
// has expired), in one atomic write, and then sets rec.Version to the new
// version. Another writer in between makes it fail with ErrConflict, so a
// turn can never be written over another.
//
// A record fenced with a lease (Record.Fence) is written only while that
// lease is held, checked in the same atomic step as the write (Redis: the
// lease key holds the lease's token), else ErrLeaseLost: a run that lost
// its lease cannot write over the run that took the session next.
//
// Lock takes the session's lease for the length of a run: a second Lock
// of the same id fails with ErrBusy until the first is released. The
// lease of a process that died ends by itself (Redis: within the lease
// TTL, 6 s by default; in-process stores: with the process).
type Store interface {
	Get(ctx context.Context, id string) (*Record, error)
	Put(ctx context.Context, rec *Record) error
	Delete(ctx context.Context, id string) error
	List(ctx context.Context, f Filter) ([]Info, error)
	Lock(ctx context.Context, id string) (Lease, error)
	// Name says what the store is, for banners and logs.
	Name() string
	Close() error
}

// Errors of stores.
var (
	// ErrNotFound: no such session, or it expired.
	ErrNotFound = errors.New("no such session")
	// ErrBusy: another run holds the session.
	ErrBusy = errors.New("the session is busy: another run of this conversation is in progress")
	// ErrConflict: the session changed since it was read.
	ErrConflict = errors.New("the session changed since it was read (deleted, or written by another run)")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("the session store is closed")
)

// encode and decode are the stored form of a record (JSON, so that a store
// can be read with the usual tools).
func encode(r *Record) ([]byte, error) { return json.Marshal(r) }

func decode(b []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if r.Messages == nil {
		r.Messages = []events.Message{}
	}
	return &r, nil
}

// sortInfos orders a list most recently updated first (then by id) and
// applies the limit.
func sortInfos(list []Info, limit int) []Info {
	slices.SortFunc(list, func(a, b Info) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if limit > 0 && len(list) > limit {
		list = list[:limit]
	}
	return list
}
