package tools

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestAcquireSubagentBoundsConcurrency(t *testing.T) {
	r := &Run{MaxSubagents: 2}
	var running, peak atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := r.AcquireSubagent(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(10 * time.Millisecond)
			running.Add(-1)
		}()
	}
	wg.Wait()
	if got := peak.Load(); got != 2 {
		t.Errorf("peak concurrency %d, want 2", got)
	}
}

func TestAcquireSubagentWaitEndsWithTheContext(t *testing.T) {
	r := &Run{MaxSubagents: 1}
	release, err := r.AcquireSubagent(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := r.AcquireSubagent(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	release()
	again, err := r.AcquireSubagent(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	again()
}

func TestAcquireSubagentUnbounded(t *testing.T) {
	for _, r := range []*Run{nil, {}} {
		for range 100 {
			if _, err := r.AcquireSubagent(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
}
