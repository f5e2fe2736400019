package components

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
	endpointApi "github.com/rulego/rulego/api/types/endpoint"
	"github.com/rulego/rulego/endpoint"
	"github.com/rulego/rulego/endpoint/rest"

	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// With metadata stream=true and no Sink in the context, the events reach
// the caller as Stream-relation messages, in order, before one Success.
func TestRuleGoNativeStream(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Sequence(
		llmtest.Calls(llmtest.Call("test_add", `{"a":2,"b":2}`)),
		llmtest.Reply("It is 4."),
	))
	id, dsl := agentChain(t, srv.URL, map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "test_add"}}})
	e := newEngine(t, id, dsl)
	r := send(t, context.Background(), e, "2+2?", map[string]string{"stream": "true"}, false)
	end := oneTerminal(t, r, types.Success)
	if end.msg.GetData() != "It is 4." {
		t.Fatalf("answer %q", end.msg.GetData())
	}
	var js [][]byte
	for _, s := range r.streamed() {
		if s.msg.Metadata.GetValue("eventType") == "" || s.msg.DataType != types.JSON {
			t.Fatalf("stream message without eventType: %+v", s.msg)
		}
		js = append(js, []byte(s.msg.GetData()))
	}
	if len(js) < 8 {
		t.Fatalf("only %d stream messages", len(js))
	}
	aguicheck.CheckStream(t, js)
	// Without stream=true and without a Sink, nothing is streamed.
	r = send(t, context.Background(), e, "2+2?", nil, false)
	if len(r.streamed()) != 0 {
		t.Fatalf("%d stream messages in sync mode", len(r.streamed()))
	}
}

// A core endpoint/http route with an SSE out-processor streams a run.
func TestEndpointHTTPStreamsSSE(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: "Streaming over a RuleGo endpoint.", ChunkSize: 5}))
	id, dsl := agentChain(t, srv.URL, nil)
	pool := rulego.NewRuleGo()
	if _, err := pool.New(id, dsl, rulego.WithConfig(rulego.NewConfig())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Stop)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ep, err := endpoint.Registry.New(rest.Type, rulego.NewConfig(), rest.Config{Server: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ep.Destroy)
	sse := func(_ endpointApi.Router, ex *endpointApi.Exchange) bool {
		msg := ex.Out.GetMsg()
		ex.Out.Headers().Set("Content-Type", "text/event-stream")
		if msg.Metadata.GetValue("eventType") != "" {
			ex.Out.SetBody([]byte("data: " + msg.GetData() + "\n\n"))
		} else {
			ex.Out.SetBody([]byte("event: answer\ndata: " + msg.GetData() + "\n\n"))
		}
		if f, ok := ex.Out.(endpointApi.Flusher); ok {
			f.Flush()
		}
		return true
	}
	router := endpoint.NewRouter(endpointApi.RouterOptions.WithRuleGo(pool)).From("/chat").To("chain:" + id).Process(sse).Wait().End()
	if _, err := ep.AddRouter(router, "POST"); err != nil {
		t.Fatal(err)
	}
	if err := ep.Start(); err != nil {
		t.Fatal(err)
	}
	var resp *http.Response
	for i := 0; i < 50; i++ {
		resp, err = http.Post("http://"+addr+"/chat?stream=true", "text/plain", strings.NewReader("hello"))
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var js [][]byte
	var answer string
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "answer":
			answer = strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, "data: "):
			js = append(js, []byte(strings.TrimPrefix(line, "data: ")))
		}
	}
	if answer != "Streaming over a RuleGo endpoint." {
		t.Fatalf("answer %q", answer)
	}
	for _, v := range aguicheck.Check(js) {
		t.Errorf("AG-UI violation: %v", v)
	}
	if len(js) < 6 {
		t.Fatalf("%d SSE events", len(js))
	}
}
