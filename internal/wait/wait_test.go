package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	if err := For(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("a plain wait: %v", err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := For(done, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("no wait on a done context: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := For(ctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cut short: %v", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("the context did not cut the wait short")
	}
}
