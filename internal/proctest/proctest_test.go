package proctest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestBufferTakesConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Fatalf("%d bytes, want 800", len(got))
	}
}

func TestWaitHTTPReturnsOnceAnswered(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer srv.Close()
	WaitHTTP(t, srv.URL, make(chan struct{}), time.Second, "the server", func() string { return "" })
}

// fatalRecorder is a testing.TB whose Fatalf records the failure and ends
// the goroutine, as the testing package's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	panic(f)
}

func failure(t *testing.T, fn func(tb testing.TB)) string {
	t.Helper()
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != any(rec) {
				panic(r)
			}
		}()
		fn(rec)
	}()
	return rec.msg
}

func TestWaitHTTPFailsWhenTheProcessEnds(t *testing.T) {
	exited := make(chan struct{})
	close(exited)
	addr := FreeAddr(t)
	msg := failure(t, func(tb testing.TB) {
		WaitHTTP(tb, "http://"+addr, exited, time.Minute, "the server", func() string { return "its logs" })
	})
	if !strings.Contains(msg, "exited before answering") {
		t.Fatalf("failure %q", msg)
	}
	msg = failure(t, func(tb testing.TB) {
		WaitHTTP(tb, "http://"+addr, make(chan struct{}), 100*time.Millisecond, "the server", func() string { return "its logs" })
	})
	if !strings.Contains(msg, "did not answer") {
		t.Fatalf("failure %q", msg)
	}
}
