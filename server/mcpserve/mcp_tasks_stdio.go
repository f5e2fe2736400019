package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/server/identity"
)

// stdioTasks serves the tasks extension over stdio (ServeStdio): it takes
// the client's tasks/get, tasks/update, tasks/cancel and task
// subscriptions/listen requests out of the input mcp-go reads (mcp-go
// v1.2.1 knows only the tasks of 2025-11-25) and answers them on the
// output, as the HTTP endpoint does. A listen stream's messages are
// written on the output, tagged with its subscriptionId; it ends with its
// result when every task it watches has ended or the server stops, and
// silently when the client cancels it (notifications/cancelled naming
// its request id).
type stdioTasks struct {
	tasks *mcpTasks
	out   requestStream
	ctx   context.Context // the serving's: its caller is the client

	mu      sync.Mutex
	listens map[string]context.CancelFunc // by request id
	wg      sync.WaitGroup
}

func newStdioTasks(ctx context.Context, m *mcpTasks, out requestStream) *stdioTasks {
	return &stdioTasks{tasks: m, out: out, ctx: ctx, listens: map[string]context.CancelFunc{}}
}

// filter is in without the requests stdioTasks answers.
func (st *stdioTasks) filter(in io.Reader) io.Reader {
	return &stdioTaskFilter{br: bufio.NewReader(in), take: st.take}
}

// take answers line when it is a request of the tasks extension, and
// reports whether it did; it also sees the client's cancels of its listen
// streams (which mcp-go sees too, and ignores).
func (st *stdioTasks) take(line []byte) bool {
	if !bytes.Contains(line, []byte(`"method"`)) {
		return false
	}
	var head rpcHead
	if json.Unmarshal(line, &head) != nil {
		return false
	}
	if id, ok := head.isCancel(); ok {
		st.mu.Lock()
		if stop := st.listens[id]; stop != nil {
			stop()
		}
		st.mu.Unlock()
		return false
	}
	var req taskRequest
	if json.Unmarshal(line, &req) != nil || !req.ours() {
		return false
	}
	// A listen stream is registered before the next line is read, so that
	// a cancel right behind it finds it.
	ctx, stop := context.WithCancel(st.ctx)
	key := jsonrpcID(head.ID)
	listen := req.Method == string(mcp.MethodSubscriptionsListen)
	if listen && key != "" {
		st.mu.Lock()
		st.listens[key] = stop
		st.mu.Unlock()
	}
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		defer func() {
			stop()
			if listen && key != "" {
				st.mu.Lock()
				delete(st.listens, key)
				st.mu.Unlock()
			}
		}()
		st.serve(ctx, req, head.ID)
	}()
	return true
}

// serve answers one request.
func (st *stdioTasks) serve(ctx context.Context, req taskRequest, id json.RawMessage) {
	p := identity.From(st.ctx)
	reply := func(result any, perr *ProtocolError) {
		if perr != nil {
			st.out.notify(bytes.TrimRight(perr.response(id), "\n"))
			return
		}
		raw, _ := json.Marshal(result)
		st.out.notify(bytes.TrimRight(resultResponse(id, raw), "\n"))
	}
	if req.Method != string(mcp.MethodSubscriptionsListen) {
		reply(st.tasks.answer(ctx, req, p))
		return
	}
	if !declaresTasks(req.Params.Meta) {
		reply(nil, missingTasksExtension("task notifications on subscriptions/listen"))
		return
	}
	send := func(msg []byte) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		st.out.notify(msg)
		return nil
	}
	if st.tasks.listen(ctx, id, req.Params.Notifications.TaskIDs, p, send) {
		st.out.notify(st.tasks.listenResult(id))
	}
}

// close ends the listen streams (the client went away) and waits for the
// requests being answered.
func (st *stdioTasks) close() {
	st.mu.Lock()
	for _, stop := range st.listens {
		stop()
	}
	st.mu.Unlock()
	st.wg.Wait()
}

// stdioTaskFilter passes its input on line by line, without the lines
// take keeps.
type stdioTaskFilter struct {
	br   *bufio.Reader
	take func(line []byte) bool
	buf  []byte
	err  error
}

func (f *stdioTaskFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, err := f.br.ReadBytes('\n')
		f.err = err
		if len(line) > 0 && (err != nil || !f.take(line)) {
			f.buf = line
		}
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}
