package runrecord

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"

	"github.com/ruleagent/ruleagent/internal/redistest"
)

// stores opens each implementation with o.
func stores(o Options) map[string]func(t *testing.T) Store {
	return map[string]func(t *testing.T) Store{
		"bolt": func(t *testing.T) Store {
			db, err := bolt.Open(filepath.Join(t.TempDir(), "sessions.db"), 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			s, err := NewBolt(db, o)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"redis": func(t *testing.T) Store {
			srv := redistest.Start(t)
			opts, _ := redis.ParseURL(srv.URL)
			opts.ContextTimeoutEnabled = true
			rdb := redis.NewClient(opts)
			t.Cleanup(func() { rdb.Close() })
			return NewRedis(rdb, "test:", o)
		},
		"memory": func(t *testing.T) Store { return NewMemory(o) },
	}
}

func testRecord(id, chain, user string, started time.Time) *Record {
	return &Record{Format: Format,
		Meta: Meta{RunID: id, ChainID: chain, UserID: user, Owner: user, StartedAt: started, EndedAt: started.Add(time.Second),
			Outcome: "success", Steps: 2, Replayable: true},
		Request:  Request{Input: "hello " + strings.Repeat("x", 2000), Metadata: map[string]string{"userId": user}},
		Chains:   map[string]json.RawMessage{chain: json.RawMessage(`{"ruleChain":{"id":"` + chain + `"}}`)},
		Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":"hello"}`)},
		LLMCalls: []LLMCall{{Agent: chain + ":agent", URL: "http://llm/v1/chat/completions", Stream: true,
			Request:  WireRequest{Fields: json.RawMessage(`{"model":"m"}`), Messages: []int{0}, Tools: -1},
			Response: WireResponse{Status: 200, Body: "data: {}\n\n", BodyBytes: nil}}},
		Events: []json.RawMessage{json.RawMessage(`{"type":"RUN_STARTED"}`)},
	}
}

func TestStoreContract(t *testing.T) {
	for name, open := range stores(Options{Retention: time.Hour}) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t)
			now := time.Now().UTC().Truncate(time.Millisecond)
			for i, r := range []*Record{testRecord("run-1", "a", "ada", now.Add(-3*time.Minute)),
				testRecord("run-2", "b", "bob", now.Add(-2*time.Minute)), testRecord("run-3", "a", "bob", now.Add(-time.Minute))} {
				if i == 1 {
					r.LLMCalls[0].Response = WireResponse{BodyBytes: []byte{0xff, 0xfe, 'x'}, Broken: "unexpected EOF"}
				}
				if err := s.Put(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Get(ctx, "run-2")
			if err != nil {
				t.Fatal(err)
			}
			if got.Meta.Bytes == 0 || len(got.Events) != 1 || string(got.Events[0]) != `{"type":"RUN_STARTED"}` || string(got.LLMCalls[0].Response.BodyData()) != "\xff\xfex" ||
				got.Request.Input != testRecord("", "", "", now).Request.Input || got.Meta.UserID != "bob" {
				t.Fatalf("the record did not come back as it was put (its events with it): %+v", got)
			}
			if _, err := s.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("an unknown run: %v, want ErrNotFound", err)
			}
			list, err := s.List(ctx, Filter{})
			if err != nil || len(list) != 3 || list[0].RunID != "run-3" || list[2].RunID != "run-1" || list[0].Bytes == 0 {
				t.Fatalf("list: %+v %v (want newest first)", list, err)
			}
			list, _ = s.List(ctx, Filter{ChainID: "a", Owner: "bob"})
			if len(list) != 1 || list[0].RunID != "run-3" {
				t.Fatalf("filtered list: %+v", list)
			}
			list, _ = s.List(ctx, Filter{Limit: 2})
			if len(list) != 2 || list[1].RunID != "run-2" {
				t.Fatalf("limited list: %+v", list)
			}
			if err := s.Delete(ctx, "run-3"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, "run-3"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a deleted record: %v", err)
			}
			if list, _ := s.List(ctx, Filter{}); len(list) != 2 {
				t.Fatalf("a deleted record is listed: %+v", list)
			}
		})
	}
}

// TestStoreRetention: a record older than the retention is neither read
// nor listed.
func TestStoreRetention(t *testing.T) {
	for name, open := range stores(Options{Retention: time.Second}) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t)
			old := testRecord("old", "a", "", time.Now().Add(-time.Hour))
			fresh := testRecord("fresh", "a", "", time.Now())
			for _, r := range []*Record{old, fresh} {
				if err := s.Put(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Get(ctx, "old"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("an expired record was read: %v", err)
			}
			if list, _ := s.List(ctx, Filter{}); len(list) != 1 || list[0].RunID != "fresh" {
				t.Fatalf("list: %+v", list)
			}
		})
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, c := range []struct{ name, raw string }{
		{"not JSON", `{`},
		{"another format", `{"format":2,"meta":{"runId":"r","chainId":"c"}}`},
		{"no run", `{"format":1,"meta":{"chainId":"c"}}`},
	} {
		if _, err := Decode([]byte(c.raw)); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", c.name, err)
		}
	}
}

// TestMemoryBound: the memory store holds at most MemoryBytes of records,
// the runs that started first going first.
func TestMemoryBound(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	one, err := encode(testRecord("run-x", "a", "ada", now))
	if err != nil {
		t.Fatal(err)
	}
	s := NewMemory(Options{MemoryBytes: 2*len(one) + len(one)/2})
	for i, id := range []string{"run-1", "run-2", "run-3"} {
		if err := s.Put(ctx, testRecord(id, "a", "ada", now.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Get(ctx, "run-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the oldest record is still held: %v", err)
	}
	list, _ := s.List(ctx, Filter{})
	if len(list) != 2 || list[0].RunID != "run-3" || list[1].RunID != "run-2" {
		t.Fatalf("held: %+v", list)
	}
	// Putting a run again replaces it, counted once.
	if err := s.Put(ctx, testRecord("run-3", "a", "ada", now.Add(2*time.Minute))); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(ctx, Filter{}); len(list) != 2 {
		t.Fatalf("after putting run-3 again: %+v", list)
	}
}
