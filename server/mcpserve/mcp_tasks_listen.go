package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/state/tasks"
)

// This file serves the status notifications of the tasks extension
// (SEP-2663, "Task Status Notifications"): a client opens a
// subscriptions/listen stream whose filter names taskIds, and gets a
// notifications/tasks (the task's DetailedTask, as tasks/get answers it)
// each time one of them changes, until every one has ended.
//
// A change made by this replica wakes its listeners at once (watchedStore);
// one made by another replica as soon as the store tells of it (Redis
// pub/sub, tasks.Changes), and at the latest when the listener next reads
// the store, every taskPollInterval (a change told while the replica's
// subscription was down is not told again).

// MaxListenTasks bounds the tasks one stream watches.
const MaxListenTasks = 100

// methodNotificationTasks is the extension's status notification.
const methodNotificationTasks = "notifications/tasks"

// taskListeners are the open listen streams of one process, by task id.
type taskListeners struct {
	// poll is how often a stream reads its tasks, in nanoseconds.
	poll atomic.Int64
	// unfollow ends the subscription to the store's changes.
	unfollow context.CancelFunc

	mu    sync.Mutex
	byID  map[string]map[chan struct{}]struct{}
	ended chan struct{} // closed by endAll; replaced for later streams
}

func newTaskListeners(store tasks.Store) *taskListeners {
	l := &taskListeners{byID: map[string]map[chan struct{}]struct{}{}, ended: make(chan struct{}), unfollow: func() {}}
	l.poll.Store(int64(taskPollInterval))
	if ch, ok := store.(tasks.Changes); ok {
		// Ended by close; without it (Redis down at start), the streams
		// read the store every poll.
		ctx, cancel := context.WithCancel(context.Background())
		if ch.Subscribe(ctx, l.changed) == nil {
			l.unfollow = cancel
		} else {
			cancel()
		}
	}
	return l
}

// close ends the open streams and the subscription to the store's
// changes.
func (l *taskListeners) close() {
	l.unfollow()
	l.endAll()
}

// add registers wake for the tasks ids and returns the channel that ends
// the stream, and a function that unregisters it.
func (l *taskListeners) add(ids []string, wake chan struct{}) (<-chan struct{}, func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		set := l.byID[id]
		if set == nil {
			set = map[chan struct{}]struct{}{}
			l.byID[id] = set
		}
		set[wake] = struct{}{}
	}
	return l.ended, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, id := range ids {
			delete(l.byID[id], wake)
			if len(l.byID[id]) == 0 {
				delete(l.byID, id)
			}
		}
	}
}

// changed wakes the streams watching task id.
func (l *taskListeners) changed(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for wake := range l.byID[id] {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

// endAll ends the open streams (each answers its request, as a listen
// stream the server tears down does); streams opened later are served.
func (l *taskListeners) endAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.ended)
	l.ended = make(chan struct{})
}

// watchedStore is the task store that tells this process's listeners of
// the changes written through it.
type watchedStore struct {
	tasks.Store
	listeners *taskListeners
}

func (s watchedStore) Create(ctx context.Context, t *tasks.Task) error {
	err := s.Store.Create(ctx, t)
	if err == nil {
		s.listeners.changed(t.ID)
	}
	return err
}

func (s watchedStore) Update(ctx context.Context, id string, fn func(*tasks.Task) error) (*tasks.Task, error) {
	t, err := s.Store.Update(ctx, id, fn)
	if err == nil {
		s.listeners.changed(id)
	}
	return t, err
}

// listenFilter is what a subscriptions/listen request's filter says of
// tasks: TaskIDs is nil when it asks for no task notification.
type listenFilter struct {
	TaskIDs []string `json:"taskIds"`
}

// listen serves one listen stream for the tasks ids, as caller p: it
// sends the acknowledgement (naming the tasks it watches: those p may see,
// at most MaxListenTasks), then each watched task's state as it is now and
// after every change, and returns when every watched task has ended (true:
// the stream is to be answered with its result), when the server ends the
// stream (true), or when ctx ends or a send fails (false: the client left).
// send writes one JSON-RPC message.
func (m *mcpTasks) listen(ctx context.Context, sub json.RawMessage, ids []string, p identity.Principal, send func([]byte) error) bool {
	meta := map[string]any{mcp.MetaKeySubscriptionID: sub}
	watched := []string{} // [] in the acknowledgement, not null
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] || len(watched) == MaxListenTasks {
			continue
		}
		seen[id] = true
		if _, err := m.find(ctx, id, p); err == nil {
			watched = append(watched, id)
		}
	}
	ack, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": mcp.MethodNotificationSubscriptionsAcknowledged,
		"params": map[string]any{"_meta": meta, "notifications": map[string]any{"taskIds": watched}}})
	if send(ack) != nil {
		return false
	}
	wake := make(chan struct{}, 1)
	ended, remove := m.listeners.add(watched, wake)
	defer remove()
	last := map[string][]byte{}
	tick := time.NewTicker(time.Duration(m.listeners.poll.Load()))
	defer tick.Stop()
	for {
		open := watched[:0]
		for _, id := range watched {
			t, err := m.find(ctx, id, p)
			if err != nil {
				continue // expired meanwhile: nothing more will come
			}
			w := taskWire(t, "complete")
			delete(w, "resultType")
			state, _ := json.Marshal(w)
			if !bytes.Equal(state, last[id]) {
				last[id] = state
				w["_meta"] = meta
				msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": methodNotificationTasks, "params": w})
				if send(msg) != nil {
					return false
				}
			}
			if !t.Status.Terminal() {
				open = append(open, id)
			}
		}
		if watched = open; len(watched) == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ended:
			return true
		case <-wake:
		case <-tick.C:
		}
	}
}

// listenResult is the answer that closes listen stream sub.
func (m *mcpTasks) listenResult(sub json.RawMessage) []byte {
	meta := map[string]any{mcp.MetaKeySubscriptionID: sub}
	for k, v := range m.meta {
		meta[k] = v
	}
	raw, _ := json.Marshal(map[string]any{"resultType": "complete", "_meta": meta})
	return bytes.TrimRight(resultResponse(sub, raw), "\n")
}
