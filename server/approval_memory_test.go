package server

import (
	"fmt"
	"testing"
	"time"
)

// The "always" memory is bounded per thread and in threads (the least
// recently used go first) and lapses after its time to live.
func TestApprovalMemoryIsBoundedAndExpires(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m := newApprovalMemory(3, 2, time.Hour, func() time.Time { return now })
	for i := range 4 {
		m.allow("t1", fmt.Sprint("call-", i))
	}
	if m.allowed("t1", "call-0") || !m.allowed("t1", "call-1") || !m.allowed("t1", "call-3") {
		t.Fatal("per thread, the least recently used call should go first")
	}
	// call-1 was just used: call-2 is now the oldest.
	m.allow("t1", "call-4")
	if m.allowed("t1", "call-2") || !m.allowed("t1", "call-1") {
		t.Fatal("using a call should keep it")
	}
	m.allow("t2", "x")
	m.allowed("t1", "call-1") // t1 used last: t2 is the oldest thread
	m.allow("t3", "y")
	if m.allowed("t2", "x") || !m.allowed("t1", "call-1") || !m.allowed("t3", "y") {
		t.Fatal("the least recently used thread should go first")
	}
	if threads, calls := m.size(); threads != 2 || calls != 4 {
		t.Fatalf("size: %d threads, %d calls", threads, calls)
	}
	// An approval lapses an hour after it was given, used or not; giving
	// it again renews it.
	now = now.Add(59 * time.Minute)
	m.allow("t3", "y")
	now = now.Add(2 * time.Minute)
	if m.allowed("t1", "call-1") || !m.allowed("t3", "y") {
		t.Fatal("approvals should lapse after their time to live")
	}
	now = now.Add(time.Hour)
	if m.allowed("t3", "y") {
		t.Fatal("a renewed approval should lapse too")
	}
	if threads, _ := m.size(); threads != 1 {
		t.Fatalf("a thread whose last approval lapsed on use should be forgotten: %d", threads)
	}
	// Scopes are exact: another caller's thread of the same id is another
	// scope.
	m.allow("alice\x00t", "k")
	if m.allowed("bob\x00t", "k") {
		t.Fatal("another caller's thread inherited an approval")
	}
}
