// Package wait holds the one wait that both the LLM client's retries and
// the MCP client's reconnections make: a delay that a context cuts short.
package wait

import (
	"context"
	"time"
)

// For waits d, or until ctx is done (its error then). A d of zero or less
// does not wait, and still reports a context already done.
func For(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
