//go:build !linux

package write

import "testing"

// makeImmutable needs Linux's file attributes; elsewhere the test that uses
// it is skipped.
func makeImmutable(t *testing.T, dir string) (undo func()) {
	t.Helper()
	t.Skip("immutable directories are only set up on Linux")
	return func() {}
}
