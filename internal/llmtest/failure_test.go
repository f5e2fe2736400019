package llmtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

func TestErrorStatusSurfacesAsAPIError(t *testing.T) {
	tests := []struct {
		status   int
		wantType string
		headers  map[string]string
	}{
		{400, "invalid_request_error", nil},
		{401, "authentication_error", nil},
		{429, "rate_limit_error", map[string]string{"Retry-After": "7"}},
		{500, "server_error", nil},
		{503, "server_error", nil},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			srv := NewServer(t, Always(Response{Status: tt.status, ErrorMessage: "scripted trouble", Headers: tt.headers}))
			client := newClient(srv)
			var err error
			if stream {
				err = streamChat(context.Background(), t, client, userParams("q")).err
			} else {
				_, err = client.Chat.Completions.New(context.Background(), userParams("q"))
			}
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Errorf("status %d stream %v: error %v (%T), want *openai.Error", tt.status, stream, err, err)
				continue
			}
			if apiErr.StatusCode != tt.status || apiErr.Message != "scripted trouble" || apiErr.Type != tt.wantType {
				t.Errorf("status %d stream %v: got status %d message %q type %q", tt.status, stream, apiErr.StatusCode, apiErr.Message, apiErr.Type)
			}
			for k, v := range tt.headers {
				if got := apiErr.Response.Header.Get(k); got != v {
					t.Errorf("status %d: header %s = %q, want %q", tt.status, k, got, v)
				}
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("status %d: %d requests recorded, want 1", tt.status, n)
			}
		}
	}
}

func TestBreakAfterCutsTheStream(t *testing.T) {
	srv := NewServer(t, Always(Response{Text: "one two three four five", ChunkSize: 4, BreakAfter: 3}))
	got := streamChat(context.Background(), t, newClient(srv), userParams("q"))
	if got.err == nil {
		t.Fatal("a cut stream must end with an error")
	}
	if !errors.Is(got.err, io.ErrUnexpectedEOF) {
		t.Errorf("error %v, want an unexpected EOF from the cut connection", got.err)
	}
	if len(got.chunks) != 3 {
		t.Errorf("%d chunks before the cut, want 3", len(got.chunks))
	}
	if got.acc.Choices[0].FinishReason != "" || got.acc.Choices[0].Message.Content != "one two " {
		t.Errorf("partial answer: content %q finish %q", got.acc.Choices[0].Message.Content, got.acc.Choices[0].FinishReason)
	}
}

func TestBreakAfterLongerThanStreamCutsBeforeDone(t *testing.T) {
	srv := NewServer(t, Always(Response{Text: "hi", BreakAfter: 100}))
	got := streamChat(context.Background(), t, newClient(srv), userParams("q"))
	if got.err == nil {
		t.Fatal("the stream must be cut before [DONE]")
	}
	if got.acc.Choices[0].FinishReason != "stop" {
		t.Errorf("every chunk should have arrived before the cut, finish %q", got.acc.Choices[0].FinishReason)
	}
}

func TestBreakAfterWithoutStreamingDropsTheConnection(t *testing.T) {
	srv := NewServer(t, Always(Response{Text: "never sent", BreakAfter: 1}))
	_, err := newClient(srv).Chat.Completions.New(context.Background(), userParams("q"))
	var apiErr *openai.Error
	if err == nil || errors.As(err, &apiErr) {
		t.Errorf("error %v, want a transport error", err)
	}
}

func TestErrorEvent(t *testing.T) {
	srv := NewServer(t, Always(Response{Text: "partial", ErrorEvent: "model overloaded"}))
	client := newClient(srv)
	got := streamChat(context.Background(), t, client, userParams("q"))
	var streamErr *ssestream.StreamError
	if !errors.As(got.err, &streamErr) || !strings.Contains(streamErr.Error(), "model overloaded") {
		t.Fatalf("error %v (%T), want a stream error naming the message", got.err, got.err)
	}
	if got.acc.Choices[0].Message.Content != "partial" || got.acc.Choices[0].FinishReason != "" {
		t.Errorf("content %q finish %q before the error", got.acc.Choices[0].Message.Content, got.acc.Choices[0].FinishReason)
	}

	_, err := client.Chat.Completions.New(context.Background(), userParams("q"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || apiErr.Message != "model overloaded" {
		t.Errorf("without streaming: %v, want a 500 with the message", err)
	}
}

func TestChunkDelayDelays(t *testing.T) {
	const delay = 40 * time.Millisecond
	// role + 3 content chunks + finish = 5 delayed chunks
	srv := NewServer(t, Always(Response{Text: "abcdefghijkl", ChunkSize: 4, ChunkDelay: delay}))
	client := newClient(srv)
	start := time.Now()
	stream := client.Chat.Completions.NewStreaming(context.Background(), userParams("q"))
	var arrivals []time.Duration
	for stream.Next() {
		arrivals = append(arrivals, time.Since(start))
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(arrivals) != 5 {
		t.Fatalf("%d chunks, want 5", len(arrivals))
	}
	// Loose lower bounds only: timers never fire early, while a loaded
	// machine can make them late.
	if arrivals[0] < delay {
		t.Errorf("first chunk after %v, want at least %v", arrivals[0], delay)
	}
	if total := arrivals[4]; total < 5*delay {
		t.Errorf("stream took %v, want at least %v", total, 5*delay)
	}

	start = time.Now()
	if _, err := client.Chat.Completions.New(context.Background(), userParams("q")); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < delay {
		t.Errorf("non-streaming answer after %v, want at least %v", took, delay)
	}
}

// closesPromptly closes srv and fails if that takes long: Close waits for
// every handler, so a slow Close means one kept running.
func closesPromptly(t *testing.T, srv *Server) {
	t.Helper()
	withinDeadline(t, "Close", srv.Close)
}

// handlersEndOnTheirOwn proves that the handlers stopped because their client
// left: it closes only the underlying httptest server, which waits for them,
// without the signal Server.Close sends to end hanging and delayed answers.
func handlersEndOnTheirOwn(t *testing.T, srv *Server) {
	t.Helper()
	withinDeadline(t, "waiting for the handlers", srv.http.Close)
}

func withinDeadline(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatalf("%s took over 3s: a handler kept running", what)
	}
}

func TestHangReturnsWhenTheClientCancels(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := NewServer(t, Always(Response{Hang: true}))
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		var err error
		if stream {
			err = streamChat(ctx, t, newClient(srv), userParams("q")).err
		} else {
			_, err = newClient(srv).Chat.Completions.New(ctx, userParams("q"))
		}
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("stream %v: error %v, want the context's deadline", stream, err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("stream %v: returned after %v", stream, took)
		}
		if srv.LastRequest() == nil {
			t.Errorf("stream %v: a hanging request must still be recorded", stream)
		}
		handlersEndOnTheirOwn(t, srv)
	}
}

func TestHangEndsWhenTheServerCloses(t *testing.T) {
	srv := NewServer(t, Always(Response{Hang: true}))
	// A plain HTTP client, because an empty 200 would also fail in the SDK:
	// the connection itself must be dropped.
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
		if err != nil {
			errc <- nil
			return
		}
		defer resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); err != nil {
			errc <- nil
			return
		}
		errc <- fmt.Errorf("got a complete %d answer instead of a dropped connection", resp.StatusCode)
	}()
	for deadline := time.Now().Add(3 * time.Second); srv.LastRequest() == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request never arrived")
		}
	}
	closesPromptly(t, srv)
	select {
	case err := <-errc:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the client still waits after Close")
	}
}

func TestChunkDelayStopsWhenTheClientLeaves(t *testing.T) {
	// A delay far longer than the test: only the client's departure can end
	// the handler's wait in time.
	srv := NewServer(t, Always(Response{Text: "never sent", ChunkDelay: time.Minute}))
	// The timeout bounds the wait for the headers, which must not be held
	// back by the first chunk's delay.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	stream := newClient(srv).Chat.Completions.NewStreaming(ctx, userParams("q"))
	if err := stream.Err(); err != nil {
		t.Fatalf("headers must arrive before the first chunk's delay: %v", err)
	}
	cancel()
	_ = stream.Close()
	handlersEndOnTheirOwn(t, srv)
}
