package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// A scripted model calls web_fetch twice in one turn: once for a page on
// a local server the tool's config allows, once for the cloud metadata
// address. It reads the page as Markdown and the refusal with its reason,
// then answers. The metadata request is never made; the page is fetched
// once.
func TestAgentCallsWebFetch(t *testing.T) {
	s := newSite(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<html><head><title>Release notes</title></head><body><h1>v2.0</h1><p>Adds <em>web tools</em>.</p></body></html>`)
	})
	page := "http://127.0.0.1:" + s.port + "/notes"
	llm := llmtest.NewServer(t, llmtest.Sequence(
		llmtest.Calls(
			llmtest.Call("web_fetch", `{"url":"`+page+`"}`),
			llmtest.Call("web_fetch", `{"url":"http://169.254.169.254/latest/meta-data/iam/security-credentials/"}`),
		),
		llmtest.Reply("Version 2.0 adds web tools."),
	))
	spec, _ := json.Marshal([]any{map[string]any{"type": "builtin", "name": "web_fetch",
		"config": map[string]any{"allowPrivate": []string{"127.0.0.1/32"}, "timeout": "10s"}}})
	specs, err := tools.ParseSpecs(spec)
	if err != nil {
		t.Fatal(err)
	}
	scr := scrub.New()
	set, err := tools.Build(context.Background(), specs, tools.BuildEnv{Secrets: scr})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	client, err := agent.NewClient(agent.LLMConfig{Endpoints: []agent.Endpoint{{URL: llm.URL, Key: "sk-test", Model: "test-model"}}, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := aspects.NewManager()
	a, err := agent.New(agent.Config{LLM: client, Tools: set, Aspects: m, ParallelToolCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	var rec events.Recorder
	out, err := a.Run(context.Background(), agent.Input{Messages: []events.Message{{Role: events.RoleUser, Content: "What is new?"}},
		SystemPrompt: "You read the web.", Stream: true, Scrubber: scr}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	if out.Content != "Version 2.0 adds web tools." || out.ToolCalls != 2 {
		t.Fatalf("%q, %d tool calls", out.Content, out.ToolCalls)
	}

	reqs := llm.Requests()
	if len(reqs) != 2 || !slices.Contains(reqs[0].ToolNames(), "web_fetch") {
		t.Fatalf("%d requests; tools %v", len(reqs), reqs[0].ToolNames())
	}
	results := reqs[1].ToolResults()
	if len(results) != 2 {
		t.Fatalf("%d tool results", len(results))
	}
	if r := results[0].Content; !strings.Contains(r, "Title: Release notes") || !strings.Contains(r, "# v2.0") || !strings.Contains(r, "Adds *web tools*.") {
		t.Fatalf("page result: %s", r)
	}
	if r := results[1].Content; !strings.Contains(r, "Error (permission_denied)") || !strings.Contains(r, "destination 169.254.169.254 is a cloud metadata address") {
		t.Fatalf("metadata result: %s", r)
	}
	if n := s.hits.Load(); n != 1 {
		t.Fatalf("the page was requested %d times", n)
	}
	var kinds []string
	for _, e := range rec.Events() {
		if e.Type == events.ToolCallResult {
			kinds = append(kinds, e.Meta.ErrorKind)
		}
	}
	if !slices.Equal(kinds, []string{"", "permission_denied"}) && !slices.Equal(kinds, []string{"permission_denied", ""}) {
		t.Fatalf("result kinds %q", kinds)
	}
}
