package server

import (
	"bufio"
	"cmp"
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ruleagent/ruleagent/internal/redistest"
	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/state/control"
	"github.com/ruleagent/ruleagent/state/eventlog"
	"github.com/ruleagent/ruleagent/state/health"
	"github.com/ruleagent/ruleagent/state/redisconn"
)

// testFlush is the event logs' flush interval in these tests.
const testFlush = 10 * time.Millisecond

// boltRunLog is the embedded run log in a bbolt file of dir (the one
// machine case), closed after the store.
func boltRunLog(t *testing.T, path string) (RunLog, eventlog.Log) {
	t.Helper()
	return boltRunLogFlushing(t, path, testFlush)
}

// boltRunLogFlushing is boltRunLog flushing every flush.
func boltRunLogFlushing(t *testing.T, path string, flush time.Duration) (RunLog, eventlog.Log) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	lg, err := eventlog.NewBolt(db, eventlog.Options{FlushInterval: flush})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lg.Close(); _ = db.Close() })
	return RunLog{Events: lg, Replica: "solo", ReapEvery: 50 * time.Millisecond}, lg
}

// replica is one replica of an in-process fleet on a real Redis: its own
// connection, heartbeat, control subscription and event log.
type replica struct {
	*apiEnv
	id    string
	redis *redistest.Server
	reg   *health.Redis
	bus   *control.Redis
	lg    *eventlog.Redis
}

// die makes the replica vanish as kill -9 does, its events not yet
// written included: they never reach the log (they are written only when
// the test ends).
func (r *replica) die() {
	_ = r.reg.Leave(context.Background())
	_ = r.bus.Close()
}

// kill makes the replica vanish as kill -9 would for the others: its
// heartbeat goes, it answers no control message, and its runs' events stop
// reaching the log (its runs still go on in this process, unseen).
func (r *replica) kill() {
	_ = r.reg.Leave(context.Background())
	_ = r.bus.Close()
	_ = r.lg.Close()
}

// redisFleet starts n replicas of the test chains on one real redis-server.
func redisFleet(t *testing.T, n int) []*replica {
	t.Helper()
	return redisFleetFlushing(t, make([]time.Duration, n))
}

// redisFleetFlushing is redisFleet with each replica's event log flush
// interval (testFlush when 0).
func redisFleetFlushing(t *testing.T, flush []time.Duration) []*replica {
	t.Helper()
	n := len(flush)
	rs := redistest.Start(t)
	var out []*replica
	for i := range n {
		ctx := context.Background()
		conn, err := redisconn.Open(ctx, rs.URL, redisconn.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := &replica{id: "replica-" + strconv.Itoa(i), redis: rs}
		r.reg = health.NewRedis(conn.Client, conn.Prefix, time.Second)
		if err := r.reg.Join(ctx, health.Replica{ID: r.id}); err != nil {
			t.Fatal(err)
		}
		if r.bus, err = control.NewRedis(ctx, conn.Client, conn.Prefix, r.id, control.RedisOptions{Alive: r.reg.Alive}); err != nil {
			t.Fatal(err)
		}
		r.lg = eventlog.NewRedis(conn.Client, conn.Prefix, eventlog.Options{FlushInterval: cmp.Or(flush[i], testFlush)})
		t.Cleanup(func() {
			_ = r.lg.Close()
			_ = r.bus.Close()
			_ = r.reg.Leave(context.Background())
			_ = conn.Close()
		})
		r.apiEnv = newAPIEnvWith(t, Options{}, StoreOptions{Checkpoints: checkpoint.NewRedis(conn.Client, conn.Prefix, r.reg.Key), Replica: r.id, RunLog: RunLog{Events: r.lg, Replica: r.id, Alive: r.reg.Alive,
			Control: r.bus, ReapEvery: 100 * time.Millisecond}})
		out = append(out, r)
	}
	return out
}

// sseFrame is one SSE sseFrame: its id (0: none) and data.
type sseFrame struct {
	id   uint64
	data string
}

// sseStream is an SSE response read as it comes.
type sseStream struct {
	resp   *http.Response
	frames chan sseFrame
	done   chan []sseFrame
}

// openSSE sends a request and reads its SSE frames as they come: frames
// gets them while it has room, done all of them once the stream ends.
func (e *apiEnv) openSSE(ctx context.Context, method, path, body string, hdr ...string) *sseStream {
	e.t.Helper()
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, e.base+path, nil)
	if rd != nil {
		req, _ = http.NewRequestWithContext(ctx, method, e.base+path, rd)
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	s := &sseStream{resp: resp, frames: make(chan sseFrame, 1000), done: make(chan []sseFrame, 1)}
	go func() {
		defer resp.Body.Close()
		var all []sseFrame
		var cur sseFrame
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.data != "" {
					all = append(all, cur)
					select {
					case s.frames <- cur:
					default:
					}
				}
				cur = sseFrame{}
			case strings.HasPrefix(line, "id: "):
				cur.id, _ = strconv.ParseUint(line[4:], 10, 64)
			case strings.HasPrefix(line, "data: "):
				cur.data = line[6:]
			}
		}
		close(s.frames)
		s.done <- all
	}()
	return s
}

// wait waits for the stream's end (at most 20 s).
func (s *sseStream) wait(t *testing.T) []sseFrame {
	t.Helper()
	select {
	case all := <-s.done:
		return all
	case <-time.After(20 * time.Second):
		t.Fatal("the stream did not end within 20s")
		return nil
	}
}

// until reads frames until one of type typ, and returns its id.
func (s *sseStream) until(t *testing.T, typ string) uint64 {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				t.Fatalf("the stream ended before %s", typ)
			}
			if strings.Contains(f.data, `"type":"`+typ+`"`) {
				return f.id
			}
		case <-timeout:
			t.Fatalf("no %s within 10s", typ)
		}
	}
}

// terminals counts a stream's terminal events.
func terminals(fs []sseFrame) int {
	n := 0
	for _, f := range fs {
		if strings.HasPrefix(f.data, `{"type":"RUN_FINISHED"`) || strings.HasPrefix(f.data, `{"type":"RUN_ERROR"`) {
			n++
		}
	}
	return n
}

// checkIDs checks that a stream's frames carry the ids after..after+n in
// order, none missing nor repeated.
func checkIDs(t *testing.T, what string, fs []sseFrame, after uint64) {
	t.Helper()
	for i, f := range fs {
		if f.id != after+uint64(i)+1 {
			t.Fatalf("%s: sseFrame %d has id %d, want %d (%s)", what, i, f.id, after+uint64(i)+1, f.data)
		}
	}
}

// stateFile is a bbolt file for a test.
func stateFile(t *testing.T) string { return filepath.Join(t.TempDir(), "state.db") }
