package eventlog

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestMain doubles as a replica that appends to a bbolt log and waits to
// be killed (the crash case).
func TestMain(m *testing.M) {
	if path := os.Getenv("EVENTLOG_TEST_CRASH"); path != "" {
		crashChild(path)
		return
	}
	os.Exit(m.Run())
}

func crashChild(path string) {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	o := testOptions()
	l, err := NewBolt(db, o)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	w, err := l.Start(context.Background(), Meta{RunID: "crashy", Owner: "dead-replica", ChainID: "chat"})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	for i := 1; i <= 50; i++ {
		w.Append(ev(i))
	}
	time.Sleep(5 * o.FlushInterval) // flushed
	fmt.Println("appended 50")
	time.Sleep(time.Minute)
}

// A replica killed mid-run (kill -9) leaves its run's log as of its last
// flush, listed as not ended; the next process (or another replica)
// continues it after its last event and ends it with one terminal event.
func TestKilledMidRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "EVENTLOG_TEST_CRASH="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	if !strings.HasPrefix(line, "appended") {
		t.Fatalf("child: %q", line)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := NewBolt(db, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := t.Context()
	live, err := l.List(ctx, Filter{Live: true})
	if err != nil || len(live) != 1 || live[0].RunID != "crashy" || live[0].Owner != "dead-replica" {
		t.Fatalf("the dead replica's run: %+v %v", live, err)
	}
	w, err := l.Continue(ctx, "crashy", "dead-replica", "janitor")
	if err != nil {
		t.Fatal(err)
	}
	if id := w.Append(ev(51)); id != 51 {
		t.Fatalf("the terminal event's id %d, want 51", id)
	}
	w.End(ctx, "error")
	got, err := collect(t, l, "crashy", 0, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, got, 1, 51)
	if m, _ := l.Meta(ctx, "crashy"); m.Status != "error" || !m.Ended() || m.Owner != "janitor" {
		t.Errorf("meta: %+v", m)
	}
}
