// Package proctest holds what the tests that start servers (a process of
// their own, or the command in the test) share: a buffer for the output
// their goroutines write, a free loopback address to serve on, and the
// wait until they answer.
package proctest

import (
	"bytes"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer safe for concurrent writes, such as a process's
// stdout and stderr, read while they are written.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// FreeAddr returns a loopback address (127.0.0.1:port) that was free a
// moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// WaitHTTP waits until a GET of url gets an answer (any status). It fails
// the test when exited is closed first (the server's process ended) or
// when timeout passes, with what (the server's name) and the output
// detail returns.
func WaitHTTP(t testing.TB, url string, exited <-chan struct{}, timeout time.Duration, what string, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("%s exited before answering %s: %s", what, url, detail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer %s within %s: %s", what, url, timeout, detail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
