package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"sync"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves the store's MCP server on in and out, one JSON-RPC
// message per line (ruleagent mcp --stdio), until in ends or ctx is done.
// It is mcp-go's stdio transport, which answers every error of a tool
// handler with -32603, like its HTTP one; as on /mcp, a chain tool's
// protocol error leaves with its own code and data (-32021 when the chain
// asks a 2026-07-28 client that did not declare elicitation, -32602 for a
// requestState that fails its check).
//
// A call's progress is written through the same writer as its response, in
// order (see requestStream); the response to a request the client
// cancelled is not written (see openCalls). As with MCPHTTP, serving logs
// why a chain is not offered. The tasks extension is served as over HTTP:
// a chain tool called by a client that declares it answers with a task
// (the CreateTaskResult replaces mcp-go's answer, as a protocol error
// does), and the extension's requests are answered beside mcp-go
// (stdioTasks).
func (s *Service) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, errLog *log.Logger) error {
	s.mcpTools.serving()
	pending := &stdioErrors{byMessage: map[string][]*ProtocolError{}}
	calls := newOpenCalls()
	w := &stdioCodeWriter{out: out, pending: pending, calls: calls}
	srv := mcpserver.NewStdioServer(s.mcp)
	if errLog != nil {
		srv.SetErrorLogger(errLog)
	}
	// The stdio transport gives every request the one context this
	// returns: the errors are matched to their answers by message.
	srv.SetContextFunc(func(ctx context.Context) context.Context {
		return context.WithValue(context.WithValue(ctx, stdioErrorsKey{}, pending), requestStreamKey{}, w)
	})
	// The tasks extension's requests are answered beside mcp-go
	// (mcp_tasks_stdio.go).
	st := newStdioTasks(ctx, s.mcpTools.tasks, w)
	defer st.close()
	return srv.Listen(ctx, &cancelWatch{r: st.filter(in), calls: calls}, w)
}

// stdioErrors are the protocol errors tool handlers returned whose answer
// has not been written yet, by message: the answer mcp-go writes carries
// the message and -32603, nothing else of the error.
type stdioErrors struct {
	mu        sync.Mutex
	byMessage map[string][]*ProtocolError
	// results are the answers that replace the -32603 with a message (a
	// task's CreateTaskResult, see render), by message.
	results map[string]json.RawMessage
}

type stdioErrorsKey struct{}

// addResult records the result that answers the request whose handler
// returned an error with message msg (unique).
func (p *stdioErrors) addResult(msg string, result json.RawMessage) {
	p.mu.Lock()
	if p.results == nil {
		p.results = map[string]json.RawMessage{}
	}
	p.results[msg] = result
	p.mu.Unlock()
}

// takeResult returns and forgets the result recorded under msg, or nil.
func (p *stdioErrors) takeResult(msg string) json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.results[msg]
	delete(p.results, msg)
	return r
}

func (p *stdioErrors) add(e *ProtocolError) {
	p.mu.Lock()
	p.byMessage[e.Message] = append(p.byMessage[e.Message], e)
	p.mu.Unlock()
}

// take returns and forgets the oldest error with message msg, or nil.
func (p *stdioErrors) take(msg string) *ProtocolError {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.byMessage[msg]
	if len(list) == 0 {
		return nil
	}
	if len(list) == 1 {
		delete(p.byMessage, msg)
	} else {
		p.byMessage[msg] = list[1:]
	}
	return list[0]
}

func (p *stdioErrors) empty() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byMessage) == 0 && len(p.results) == 0
}

// stdioCodeWriter passes mcp-go's output through, rewriting the -32603
// answer to a tool call that returned a protocol error, and dropping the
// answer to a request the client cancelled. mcp-go writes each message
// whole, with its newline, in one Write. It is also the calls'
// requestStream: their progress is written here, in order with the rest.
type stdioCodeWriter struct {
	out     io.Writer
	pending *stdioErrors
	calls   *openCalls

	mu sync.Mutex // one message at a time
}

var internalErrorCode = []byte(`"code":-32603`)

// notify implements requestStream.
func (w *stdioCodeWriter) notify(msg []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.out.Write(append(msg, '\n'))
}

func (w *stdioCodeWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if id := responseID(p); id != "" && w.calls.done(id, nil) {
		return len(p), nil // the client cancelled the request
	}
	if w.pending.empty() || !bytes.Contains(p, internalErrorCode) {
		return w.out.Write(p)
	}
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(p, &m) != nil || m.Error == nil || m.Error.Code != -32603 {
		return w.out.Write(p)
	}
	if result := w.pending.takeResult(m.Error.Message); result != nil {
		if _, err := w.out.Write(resultResponse(m.ID, result)); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	perr := w.pending.take(m.Error.Message)
	if perr == nil {
		return w.out.Write(p)
	}
	if _, err := w.out.Write(perr.response(m.ID)); err != nil {
		return 0, err
	}
	return len(p), nil
}
