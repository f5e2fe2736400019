package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/metrics"
)

// Defaults of Options.
const (
	DefaultQueueSize = 1024
	DefaultMaxWait   = 50 * time.Millisecond
)

// Options configure a Log.
type Options struct {
	// QueueSize is how many records may wait for the writer.
	QueueSize int
	// MaxWait is how long Record waits for room in a full queue before it
	// drops the record (counted and logged).
	MaxWait time.Duration
	// Logger receives the log's own troubles (drops, write errors); nil
	// means slog.Default().
	Logger *slog.Logger
}

// Log is the audit log on disk: JSON lines appended to
// <dir>/audit-YYYY-MM-DD.jsonl (UTC days), each file created 0600 and
// opened append-only. Records are written by one background goroutine in
// the order they were queued; a record that cannot be queued within
// MaxWait, or written, is dropped, counted in
// ruleagent_audit_dropped_total{reason} and logged, never silently.
type Log struct {
	dir     string
	q       chan item
	maxWait time.Duration
	log     *slog.Logger
	done    chan struct{}

	mu     sync.RWMutex // guards closed against sends on a closed queue
	closed bool

	// Owned by the writer goroutine.
	file     *os.File
	w        *bufio.Writer
	day      string
	pending  int // records buffered since the last flush
	closeErr error
	// beforeWrite, when set, runs before each record is written (tests
	// use it to hold the writer).
	beforeWrite func()

	dropMu      sync.Mutex
	dropsToLog  map[string]int
	lastDropLog time.Time
}

type item struct {
	rec   Record
	flush chan struct{}
}

// Open creates dir (0700) if needed and starts the writer. Close stops it.
func Open(dir string, o Options) (*Log, error) {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	l := &Log{dir: dir, q: make(chan item, o.QueueSize), maxWait: o.MaxWait, log: o.Logger, done: make(chan struct{}),
		dropsToLog: map[string]int{}}
	go l.run()
	return l, nil
}

// Dir is the folder of the log's files.
func (l *Log) Dir() string { return l.dir }

// FileFor is the file that holds the records of t's (UTC) day.
func (l *Log) FileFor(t time.Time) string {
	return filepath.Join(l.dir, "audit-"+t.UTC().Format(time.DateOnly)+".jsonl")
}

// Record implements Sink: it queues r, waiting at most MaxWait for room.
func (l *Log) Record(r Record) {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.drop("closed", nil)
		return
	}
	select {
	case l.q <- item{rec: r}:
		return
	default:
	}
	t := time.NewTimer(l.maxWait)
	defer t.Stop()
	select {
	case l.q <- item{rec: r}:
	case <-t.C:
		l.drop("queue_full", nil)
	}
}

// Flush waits until every record queued before it is written to its file.
func (l *Log) Flush() {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return
	}
	ch := make(chan struct{})
	l.q <- item{flush: ch}
	l.mu.RUnlock()
	<-ch
}

// Close writes what is queued, closes the file and stops the writer.
// Records after Close are dropped (and counted).
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.done
		return nil
	}
	l.closed = true
	close(l.q)
	l.mu.Unlock()
	<-l.done
	return l.closeErr
}

// run is the writer goroutine: it ends when the queue is closed and
// drained.
func (l *Log) run() {
	defer close(l.done)
	for it := range l.q {
		if it.flush != nil {
			l.flushFile()
			close(it.flush)
			continue
		}
		if l.beforeWrite != nil {
			l.beforeWrite()
		}
		l.write(&it.rec)
		if len(l.q) == 0 {
			l.flushFile()
		}
	}
	l.flushFile()
	if l.file != nil {
		l.closeErr = l.file.Close()
	}
}

func (l *Log) write(r *Record) {
	line, err := json.Marshal(r)
	if err != nil {
		l.drop("write_error", fmt.Errorf("encoding a record: %w", err))
		return
	}
	if err := l.open(r.Time); err != nil {
		l.drop("write_error", err)
		return
	}
	line = append(line, '\n')
	if _, err := l.w.Write(line); err != nil {
		l.fail(err, 1)
		return
	}
	l.pending++
}

// open makes sure the file of t's day is the one open.
func (l *Log) open(t time.Time) error {
	day := t.UTC().Format(time.DateOnly)
	if l.file != nil && day == l.day {
		return nil
	}
	l.flushFile()
	if l.file != nil {
		l.file.Close()
		l.file, l.w = nil, nil
	}
	f, err := os.OpenFile(l.FileFor(t), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
		// A file made by someone else, or by hand, is narrowed to its owner.
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return fmt.Errorf("audit log: %w", err)
		}
	}
	l.file, l.w, l.day = f, bufio.NewWriterSize(f, 64<<10), day
	return nil
}

// flushFile writes the buffered records; they count as written only then.
func (l *Log) flushFile() {
	if l.w == nil || l.pending == 0 {
		return
	}
	if err := l.w.Flush(); err != nil {
		l.fail(err, 0)
		return
	}
	metrics.AuditRecords.Add(float64(l.pending))
	l.pending = 0
}

// fail drops what the buffer held (and lost more records) and reopens
// the file for the next record: a bufio.Writer stays broken after an error.
func (l *Log) fail(err error, lost int) {
	n := l.pending + lost
	l.pending = 0
	if l.file != nil {
		l.file.Close()
	}
	l.file, l.w, l.day = nil, nil, ""
	for range n {
		l.drop("write_error", nil)
	}
	l.drop("", fmt.Errorf("audit log: writing: %w", err))
}

// drop counts a record that will not be written, and logs drops at most
// once a second with how many there were, so that a full disk does not
// flood the log as well.
func (l *Log) drop(reason string, err error) {
	if reason != "" {
		metrics.AuditDropped.WithLabelValues(reason).Inc()
	}
	l.dropMu.Lock()
	defer l.dropMu.Unlock()
	if reason != "" {
		l.dropsToLog[reason]++
	}
	now := time.Now()
	if err == nil && now.Sub(l.lastDropLog) < time.Second {
		return
	}
	l.lastDropLog = now
	args := []any{"dir", l.dir}
	for r, n := range l.dropsToLog {
		args = append(args, r, n)
	}
	clear(l.dropsToLog)
	if err != nil {
		args = append(args, "err", err)
	}
	l.log.Error("audit records dropped", args...)
}
