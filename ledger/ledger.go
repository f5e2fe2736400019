// Package ledger is the usage and cost ledger: every LLM call's tokens
// (input, output, cached, reasoning) and every tool call's duration, with
// the run, chain, thread, user and model, priced by an operator's price
// table, kept in the server's store (bbolt beside the sessions, or the
// fleet's Redis), queryable by run, thread, user, chain and day, counted
// in Prometheus with bounded labels, and checked against daily budgets per
// user and chain.
//
// The server gives each run a *Run, the agent.Recorder on the run's root
// ledger: the engine reports each call to it once, sub-agents' included.
// Records go through a bounded queue to one writer goroutine that writes
// them in batches (one transaction each), off the run's path.
package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/sessions"
)

// Defaults of Options.
const (
	DefaultRetention = 90 * 24 * time.Hour
	DefaultQueueSize = 8192
	DefaultMaxWait   = 50 * time.Millisecond
	// maxBatch bounds the records of one write.
	maxBatch = 1024
	// writeTimeout bounds one batch's write.
	writeTimeout = 10 * time.Second
	// pruneEvery is how often the writer drops days past the retention.
	pruneEvery = time.Hour
)

// Options configure a Ledger.
type Options struct {
	// Store keeps the records and daily totals (required).
	Store Store
	// Prices turns tokens into cost; nil counts tokens only.
	Prices *Prices
	// Budgets bound what a user or a chain may spend in a day; nil is none.
	Budgets *Budgets
	// Retention is how long records and daily totals are kept, counted
	// from the end of their day; DefaultRetention when zero.
	Retention time.Duration
	// QueueSize is how many records may wait for the writer; MaxWait how
	// long a call waits for room in a full queue before its record is
	// dropped (counted in ruleagent_ledger_dropped_total and logged).
	QueueSize int
	MaxWait   time.Duration
	// Logger receives the ledger's troubles; slog's default when nil.
	Logger *slog.Logger
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
}

// Ledger records, prices, totals and checks usage. It is safe for
// concurrent use; Close stops its writer after writing what is queued.
type Ledger struct {
	store     Store
	prices    *Prices
	budgets   *Budgets
	retention time.Duration
	maxWait   time.Duration
	log       *slog.Logger
	now       func() time.Time
	labels    labeler

	q      chan item
	qmu    sync.RWMutex // guards closed against sends on a closed queue
	closed bool
	done   chan struct{}

	// id names this ledger's writer in the store, which keeps the number
	// of the last batch it applied (see unwritten); seq is the writer's.
	id  string
	seq uint64
	// un is what budget checks add to the store's totals; nil without
	// budgets.
	un *unwritten

	lastPrune time.Time // the writer's
	// beforeWrite, when set, runs before each batch is written (tests use
	// it to hold the writer with records queued).
	beforeWrite func()
}

type item struct {
	rec   Record
	flush chan struct{}
}

// New starts a ledger on o.Store.
func New(o Options) (*Ledger, error) {
	if o.Store == nil {
		return nil, errors.New("ledger: no store")
	}
	if err := o.Budgets.needPrices(o.Prices); err != nil {
		return nil, err
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	l := &Ledger{store: o.Store, prices: o.Prices, budgets: o.Budgets, retention: o.Retention, maxWait: o.MaxWait,
		log: o.Logger, now: o.Now, q: make(chan item, o.QueueSize), done: make(chan struct{}), id: writerID()}
	if o.Budgets != nil {
		l.un = newUnwritten()
	}
	go l.run()
	return l, nil
}

// writerID names a ledger's writer: random, so that the servers of a
// fleet sharing a store never take each other's batches for their own.
func writerID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// StoreFor returns the ledger's store beside a session store: buckets of
// its own in a bbolt store's file, keys under a Redis store's prefix, or
// memory beside a memory store.
func StoreFor(s sessions.Store, retention time.Duration) (Store, error) {
	switch s := s.(type) {
	case *sessions.Bolt:
		return NewBolt(s.DB())
	case *sessions.Redis:
		c := s.Conn()
		return NewRedis(c.Client, c.Prefix, retention), nil
	case *sessions.Memory:
		return NewMemory(), nil
	}
	return nil, fmt.Errorf("ledger: no ledger store beside a %T session store", s)
}

// Store is the ledger's store.
func (l *Ledger) Store() Store { return l.store }

// Prices is the price table (nil: none).
func (l *Ledger) Prices() *Prices { return l.prices }

// Budgets are the daily budgets (nil: none).
func (l *Ledger) Budgets() *Budgets { return l.budgets }

// Currency is the price table's currency ("" without one).
func (l *Ledger) Currency() string {
	if l.prices == nil {
		return ""
	}
	return l.prices.Currency
}

// enqueue queues r for the writer, waiting at most MaxWait for room.
func (l *Ledger) enqueue(r Record) {
	if l.un != nil {
		l.un.queue(&r)
	}
	l.qmu.RLock()
	defer l.qmu.RUnlock()
	if !l.closed {
		select {
		case l.q <- item{rec: r}:
			return
		default:
		}
		t := time.NewTimer(l.maxWait)
		defer t.Stop()
		select {
		case l.q <- item{rec: r}:
			return
		case <-t.C:
		}
	}
	reason := "queue_full"
	if l.closed {
		reason = "closed"
	}
	if l.un != nil {
		l.un.drop(&r)
	}
	metrics.LedgerDropped.WithLabelValues(reason).Inc()
	l.log.Warn("usage record dropped", "reason", reason, "run", r.RunID, "kind", r.Kind)
}

// Flush waits until every record queued before it is written, or ctx ends.
func (l *Ledger) Flush(ctx context.Context) error {
	l.qmu.RLock()
	if l.closed {
		l.qmu.RUnlock()
		return nil
	}
	ch := make(chan struct{})
	select {
	case l.q <- item{flush: ch}:
	case <-ctx.Done():
		l.qmu.RUnlock()
		return ctx.Err()
	}
	l.qmu.RUnlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is queued and stops the writer. Records after Close
// are dropped (and counted).
func (l *Ledger) Close() {
	l.qmu.Lock()
	if !l.closed {
		l.closed = true
		close(l.q)
	}
	l.qmu.Unlock()
	<-l.done
}

// run is the writer goroutine: it takes what is queued, up to maxBatch,
// and writes it in one step; it ends when the queue is closed and drained.
func (l *Ledger) run() {
	defer close(l.done)
	batch := make([]Record, 0, 64)
	var flushes []chan struct{}
	take := func(it item) {
		if it.flush != nil {
			flushes = append(flushes, it.flush)
		} else {
			batch = append(batch, it.rec)
		}
	}
	for it := range l.q {
		take(it)
	drain:
		for len(batch) < maxBatch {
			select {
			case it, ok := <-l.q:
				if !ok {
					break drain
				}
				take(it)
			default:
				break drain
			}
		}
		if len(batch) > 0 {
			l.write(batch)
		}
		for _, f := range flushes {
			close(f)
		}
		batch, flushes = batch[:0], flushes[:0]
		l.prune()
	}
}

// write appends a batch: the store holds it (and its number) from its
// commit on, the unwritten book until then.
func (l *Ledger) write(batch []Record) {
	if l.beforeWrite != nil {
		l.beforeWrite()
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	l.seq++
	if l.un != nil {
		l.un.take(l.seq, batch)
	}
	err := l.store.Append(ctx, Batch{Writer: l.id, Seq: l.seq, Records: batch})
	if l.un != nil {
		l.un.done(l.seq)
	}
	metrics.LedgerWriteSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		metrics.LedgerDropped.WithLabelValues("write_error").Add(float64(len(batch)))
		l.log.Error("usage records not written", "records", len(batch), "store", l.store.Name(), "err", err)
		return
	}
	metrics.LedgerRecords.Add(float64(len(batch)))
}

// prune drops the days past the retention, at most once every pruneEvery.
func (l *Ledger) prune() {
	now := l.now()
	if now.Sub(l.lastPrune) < pruneEvery {
		return
	}
	l.lastPrune = now
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := l.store.Prune(ctx, dayOf(now.Add(-l.retention))); err != nil {
		l.log.Warn("old usage records not pruned", "err", err)
	}
}
