package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// benchKey is the API key the server sends (the scripted LLM ignores it).
const benchKey = "sk-bench-0123456789abcdef"

// The scenarios the scripted LLM plays, chosen by a word in the user's
// message.
const (
	// tools: three turns that each call the read tool, then an answer; no
	// delay, so a run's time is the framework's and the LLM's own work.
	scenarioTools = "scenario-tools"
	// stamp: one answer of 100 chunks 5 ms apart, each holding its write time.
	scenarioStamp = "scenario-stamp"
	// stream: the memory scenario, 40 chunks 50 ms apart.
	scenarioStream = "scenario-stream"
)

const streamChunks = 40

// toolsAnswer and streamAnswer are the final texts of those scenarios.
const toolsAnswer = "The file says hello three times."

var streamAnswer = strings.Repeat("word", streamChunks)

func script() llmtest.Script {
	turn := func(n int) llmtest.Response {
		return llmtest.Response{Text: "Let me read it.", ChunkSize: 4,
			ToolCalls: []llmtest.ToolCall{llmtest.Call("read", fmt.Sprintf(`{"operation":"file","path":"notes-%d.txt"}`, n))}}
	}
	return llmtest.Route(
		llmtest.Rule{Match: llmtest.UserContains(scenarioTools), Script: llmtest.Sequence(turn(1), turn(2), turn(3),
			llmtest.Response{Text: toolsAnswer, ChunkSize: 4})},
		llmtest.Rule{Match: llmtest.UserContains(scenarioStamp), Script: llmtest.Always(llmtest.Response{
			Text: strings.Repeat("x", 100), ChunkSize: 1, ChunkDelay: 5 * time.Millisecond, StampChunks: true})},
		llmtest.Rule{Match: llmtest.UserContains(scenarioStream), Script: llmtest.Always(llmtest.Response{
			Text: streamAnswer, ChunkSize: 4, ChunkDelay: 50 * time.Millisecond})},
	)
}

// serveLLM runs the scripted LLM until stdin closes.
func serveLLM() error { return llmtest.ServeProcess(script(), os.Stdin, os.Stdout) }

// serveProxy is the bare baseline of server memory: a plain net/http
// server that relays each request's stream from the LLM, line by line,
// flushing each event, as a minimal streaming gateway would.
func serveProxy(llmURL string) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	body := []byte(`{"model":"bench-model","stream":true,"messages":[{"role":"user","content":"` + scenarioStream + `"}]}`)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		resp, err := client.Post(llmURL+"/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if len(sc.Bytes()) == 0 {
				continue
			}
			_, _ = w.Write(sc.Bytes())
			_, _ = w.Write([]byte("\n\n"))
			_ = rc.Flush()
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h}
	fmt.Println("http://" + ln.Addr().String())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); srv.Close() }()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// toolBodies are the four requests of a tools run, as the bare client
// sends them: turn k carries k assistant tool calls and their results.
func toolBodies() []string {
	var bodies []string
	msgs := []map[string]any{{"role": "user", "content": scenarioTools}}
	for k := 0; k < 4; k++ {
		b, _ := json.Marshal(map[string]any{"model": "bench-model", "stream": true, "messages": msgs})
		bodies = append(bodies, string(b))
		id := fmt.Sprintf("call_%d", k+1)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": "Let me read it.", "tool_calls": []any{map[string]any{"id": id, "type": "function",
				"function": map[string]any{"name": "read", "arguments": fmt.Sprintf(`{"operation":"file","path":"notes-%d.txt"}`, k+1)}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": "hello"})
	}
	return bodies
}
