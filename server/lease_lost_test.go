package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/redistest"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/state/redisconn"
)

// A run whose session lease is lost (here another holder takes the
// lease key in Redis, as a replica would once this one's renewals failed
// for the lease's TTL) stops at once with RUN_ERROR code lease_lost,
// rather than going on until it writes its turn; the session keeps what
// it held, and the thread takes the next turn.
func TestRunStopsWhenItsLeaseIsLost(t *testing.T) {
	rs := redistest.Start(t)
	conn, err := redisconn.Open(t.Context(), rs.URL, redisconn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	sess := sessions.NewRedis(conn, sessions.RedisOptions{LeaseTTL: 900 * time.Millisecond, Owner: "replica-a"})
	t.Cleanup(func() { sess.Close() })
	e := newSessionEnv(t, sess, map[string]string{"memo": memoChain("memo", map[string]any{"scope": "thread"})})
	e.say("memo", "t1", "my name is Ada")

	lines, done := e.streamRunBody("memo", map[string]any{"input": "hang on", "threadId": "t1", "stream": true})
	waitEvent(t, lines, "STEP_STARTED")
	key := conn.Key("lock", "memo:thread:t1")
	if n, err := conn.Client.Exists(context.Background(), key).Result(); err != nil || n != 1 {
		t.Fatalf("the run holds no lease %s: %d %v", key, n, err)
	}
	// Another holder takes the lease.
	if err := conn.Client.Set(context.Background(), key, "1 replica-b", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	took := time.Now()
	var all []string
	select {
	case all = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the run went on after its lease was lost")
	}
	if d := time.Since(took); d > 2*time.Second {
		t.Errorf("the run stopped %s after its lease was lost", d)
	}
	last := map[string]any{}
	if err := json.Unmarshal([]byte(all[len(all)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if last["type"] != "RUN_ERROR" || last["code"] != "lease_lost" || !strings.Contains(last["message"].(string), "lease") {
		t.Errorf("the run ended with %v, want RUN_ERROR code lease_lost", last)
	}
	rec, err := sess.Get(context.Background(), "memo:thread:t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Messages) != 2 {
		t.Errorf("the session holds %d messages, want the first turn's 2", len(rec.Messages))
	}
	// Once the other holder is gone, the thread goes on.
	conn.Client.Del(context.Background(), key)
	e.say("memo", "t1", "what is my name?")
	wantConv(t, agentRequest(e, promptMemo), sysMemo,
		"user: my name is Ada", "assistant: Noted: my name is Ada", "user: what is my name?")
}
