package runrecord

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Store keeps run records. Implementations are safe for concurrent use.
type Store interface {
	// Put writes rec (replacing a record of the same run).
	Put(ctx context.Context, rec *Record) error
	// Get returns a run's record: ErrNotFound when there is none (or it
	// expired).
	Get(ctx context.Context, runID string) (*Record, error)
	// List returns the records' Metas the filter selects, most recently
	// started first.
	List(ctx context.Context, f Filter) ([]Meta, error)
	// Delete removes a run's record (none is fine).
	Delete(ctx context.Context, runID string) error
	// Name says where records are kept, for banners.
	Name() string
}

// Filter selects records in List; empty fields match any.
type Filter struct {
	ChainID  string
	ThreadID string
	UserID   string
	// Owner, when set, selects the runs of that verified caller.
	Owner string
	// Limit caps the answer (0: 100).
	Limit int
}

func (f *Filter) match(m *Meta) bool {
	return (f.ChainID == "" || f.ChainID == m.ChainID) && (f.ThreadID == "" || f.ThreadID == m.ThreadID) &&
		(f.UserID == "" || f.UserID == m.UserID) && (f.Owner == "" || f.Owner == m.Owner)
}

func (f *Filter) limit() int {
	if f.Limit <= 0 {
		return 100
	}
	return f.Limit
}

// Options bound the records.
type Options struct {
	// Retention is how long a record is kept after its run ended (7 days
	// when 0).
	Retention time.Duration
	// MaxBytes bounds one record's recorded content (16 MiB when 0); the
	// recorder stops recording a run that outgrows it (Record.Incomplete).
	MaxBytes int
	// MemoryBytes bounds what the Memory store holds in all, compressed
	// (256 MiB when 0): past it the oldest records go first.
	MemoryBytes int
}

// Fill returns o with its defaults.
func (o Options) Fill() Options {
	if o.Retention <= 0 {
		o.Retention = 7 * 24 * time.Hour
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 16 << 20
	}
	if o.MemoryBytes <= 0 {
		o.MemoryBytes = 256 << 20
	}
	return o
}

// Errors of stores.
var (
	ErrNotFound = errors.New("no such run record (unknown, expired, or the run was not recorded)")
	// ErrFormat: a record of another format, or damaged.
	ErrFormat = errors.New("the run record cannot be read")
)

// encode is a record's stored form: its JSON, gzipped.
// encoded is a record as a store keeps it: its gzipped JSON, and its
// meta with the size filled in and, for the stores that index it apart,
// as JSON.
func encoded(rec *Record) (data []byte, m Meta, metaJSON []byte, err error) {
	if data, err = encode(rec); err != nil {
		return nil, Meta{}, nil, err
	}
	m = rec.Meta
	m.Bytes = len(data)
	if metaJSON, err = json.Marshal(m); err != nil {
		return nil, Meta{}, nil, err
	}
	return data, m, metaJSON, nil
}

func encode(rec *Record) ([]byte, error) {
	r := *rec
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err := json.NewEncoder(zw).Encode(&r); err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decode reads a stored record.
func decode(data []byte) (*Record, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return Decode(raw)
}

// Decode reads a record's JSON (an export), checking its format.
func Decode(raw []byte) (*Record, error) {
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if rec.Format != Format {
		return nil, fmt.Errorf("%w: format %d, this version reads %d", ErrFormat, rec.Format, Format)
	}
	if rec.Meta.RunID == "" || rec.Meta.ChainID == "" {
		return nil, fmt.Errorf("%w: it names no run or chain", ErrFormat)
	}
	return &rec, nil
}

// sortMetas orders metas most recently started first and applies limit.
func sortMetas(out []Meta, limit int) []Meta {
	slices.SortFunc(out, func(a, b Meta) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.RunID, b.RunID)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// expired reports whether a record ended longer than retention ago.
func expired(m *Meta, now time.Time, retention time.Duration) bool {
	end := m.EndedAt
	if end.IsZero() {
		end = m.StartedAt
	}
	return now.Sub(end) > retention
}
