package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ruleagent/ruleagent/metrics"
)

var day1 = time.Date(2026, 11, 20, 23, 59, 0, 0, time.UTC)

// lines reads a log file as records.
func lines(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

func open(t *testing.T, o Options) (*Log, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "audit")
	l, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, dir
}

func TestWritesLinesPerDay(t *testing.T) {
	l, dir := open(t, Options{})
	before := testutil.ToFloat64(metrics.AuditRecords)
	l.Record(Record{Time: day1, Kind: KindToolCall, RunID: "r1", Tool: "read", Outcome: OutcomeOK, Args: Args(`{"path":"a.txt"}`)})
	l.Record(Record{Time: day1.Add(2 * time.Minute), Kind: KindLimit, RunID: "r1", Limit: "tokensPerRun", Max: 10, Used: 12, Outcome: OutcomeLimit})
	l.Flush()
	if got := testutil.ToFloat64(metrics.AuditRecords); got != before+2 {
		t.Fatalf("records counter %v -> %v", before, got)
	}
	first := lines(t, filepath.Join(dir, "audit-2026-11-20.jsonl"))
	second := lines(t, filepath.Join(dir, "audit-2026-11-21.jsonl"))
	if len(first) != 1 || first[0].Tool != "read" || string(first[0].Args) != `{"path":"a.txt"}` {
		t.Fatalf("first day %+v", first)
	}
	if len(second) != 1 || second[0].Limit != "tokensPerRun" || second[0].Used != 12 {
		t.Fatalf("second day %+v", second)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, l.FileFor(day1): 0o600} {
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != want {
			t.Fatalf("%s: mode %v (%v), want %v", path, st.Mode().Perm(), err, want)
		}
	}
}

func TestAppendsAndNarrowsMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	os.MkdirAll(dir, 0o700)
	path := filepath.Join(dir, "audit-2026-11-20.jsonl")
	old := `{"time":"2026-11-20T00:00:00Z","kind":"tool_call","runId":"old","outcome":"ok","durationMs":0}` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644)
	for _, run := range []string{"a", "b"} {
		l, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		l.Record(Record{Time: day1, Kind: KindToolCall, RunID: run, Outcome: OutcomeOK})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	got := lines(t, path)
	if len(got) != 3 || got[0].RunID != "old" || got[1].RunID != "a" || got[2].RunID != "b" {
		t.Fatalf("records %+v", got)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
}

func TestQueueFullDropsAreCounted(t *testing.T) {
	l, dir := open(t, Options{QueueSize: 1, MaxWait: time.Millisecond})
	entered, release := make(chan struct{}, 8), make(chan struct{})
	l.beforeWrite = func() {
		entered <- struct{}{}
		<-release
	}
	before := testutil.ToFloat64(metrics.AuditDropped.WithLabelValues("queue_full"))
	l.Record(Record{Time: day1, RunID: "1"})
	<-entered                                // the writer holds record 1
	l.Record(Record{Time: day1, RunID: "2"}) // fills the queue
	l.Record(Record{Time: day1, RunID: "3"}) // no room: dropped after MaxWait
	if got := testutil.ToFloat64(metrics.AuditDropped.WithLabelValues("queue_full")); got != before+1 {
		t.Fatalf("queue_full drops %v -> %v", before, got)
	}
	close(release)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got := lines(t, filepath.Join(dir, "audit-2026-11-20.jsonl"))
	if len(got) != 2 || got[0].RunID != "1" || got[1].RunID != "2" {
		t.Fatalf("records %+v", got)
	}
	closed := testutil.ToFloat64(metrics.AuditDropped.WithLabelValues("closed"))
	l.Record(Record{Time: day1, RunID: "late"})
	if got := testutil.ToFloat64(metrics.AuditDropped.WithLabelValues("closed")); got != closed+1 {
		t.Fatalf("closed drops %v -> %v", closed, got)
	}
}

func TestWriteErrorsAreCounted(t *testing.T) {
	l, dir := open(t, Options{})
	// A folder where the day's file should be: opening it fails, for root
	// too.
	if err := os.Mkdir(filepath.Join(dir, "audit-2026-11-20.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(metrics.AuditDropped.WithLabelValues("write_error"))
	l.Record(Record{Time: day1, RunID: "lost"})
	l.Record(Record{Time: day1.Add(time.Hour), RunID: "kept"}) // the next day's file works
	l.Flush()
	if got := testutil.ToFloat64(metrics.AuditDropped.WithLabelValues("write_error")); got != before+1 {
		t.Fatalf("write_error drops %v -> %v", before, got)
	}
	if got := lines(t, filepath.Join(dir, "audit-2026-11-21.jsonl")); len(got) != 1 || got[0].RunID != "kept" {
		t.Fatalf("records %+v", got)
	}
}

func TestConcurrentRecords(t *testing.T) {
	l, dir := open(t, Options{QueueSize: 16, MaxWait: time.Minute})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				l.Record(Record{Time: day1, Kind: KindToolCall, RunID: fmt.Sprint(g, "-", i), Args: Args(`{"text":"line one\nline two"}`)})
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got := lines(t, filepath.Join(dir, "audit-2026-11-20.jsonl"))
	seen := map[string]bool{}
	for _, r := range got {
		seen[r.RunID] = true
	}
	// With a MaxWait this long nothing is dropped, however slow the
	// machine: every record must be there, each on a line of its own.
	if len(seen) != 800 {
		t.Fatalf("%d distinct records of 800", len(seen))
	}
}

func TestArgsAndErrorText(t *testing.T) {
	if got := string(Args(`{"a": 1}`)); got != `{"a": 1}` {
		t.Fatalf("valid JSON changed: %s", got)
	}
	if got := string(Args(`{"a": [REDACTED`)); got != `"{\"a\": [REDACTED"` {
		t.Fatalf("invalid JSON not quoted: %s", got)
	}
	if Args("") != nil {
		t.Fatal("empty args")
	}
	long := strings.Repeat("é", MaxErrorLen)
	cut := ErrorText(long)
	if len(cut) > MaxErrorLen+len("…") || !strings.HasSuffix(cut, "…") || !json.Valid([]byte(`"`+cut+`"`)) {
		t.Fatalf("cut %d bytes", len(cut))
	}
}

func TestRecorder(t *testing.T) {
	var r Recorder
	r.Record(Record{Kind: KindToolCall, RunID: "1"})
	r.Record(Record{Kind: KindLimit, RunID: "2"})
	all := r.Records()
	all[0].RunID = "changed" // a copy
	if got := r.Records(); len(got) != 2 || got[0].RunID != "1" {
		t.Fatalf("records %+v", got)
	}
	if got := r.Records(KindLimit); len(got) != 1 || got[0].RunID != "2" {
		t.Fatalf("limit records %+v", got)
	}
}
