package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

func TestStoreLoadListRun(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("stored answer")))
	dir := t.TempDir()
	agent := `{"ruleChain":{"id":"helper","name":"Helper","additionalInfo":{"description":"Helps.","mcp":true,"inputSchema":{"type":"object"}}},
	 "metadata":{"nodes":[{"id":"a","type":"ai/agent","configuration":{"url":"${global.llm_url}","model":"m"}}]}}`
	plain := `{"ruleChain":{"id":"plain","name":"Plain"},"metadata":{"nodes":[{"id":"t","type":"jsTransform","configuration":{"jsScript":"return {msg: msg, metadata: metadata, msgType: msgType};"}}]}}`
	broken := `{"ruleChain":{"id":"broken"},"metadata":{"nodes":[{"id":"x","type":"no/such"}]}}`
	for name, body := range map[string]string{"helper.json": agent, "sub/plain.json": plain, "broken.json": broken} {
		p := filepath.Join(dir, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, errs := OpenStore(dir, NewConfig(map[string]string{"llm_url": srv.URL}))
	defer s.Close()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "broken.json") {
		t.Fatalf("load errors %v", errs)
	}
	list := s.List()
	if len(list) != 2 || list[0].ID != "helper" || !list[0].IsAgent || !list[0].MCP || list[0].Description != "Helps." || list[1].IsAgent {
		t.Fatalf("list %+v", list)
	}
	var rec events.Recorder
	res, err := s.RunChain(context.Background(), "helper", "hi", map[string]string{"threadId": "t1"}, &rec)
	if err != nil || res.Msg.GetData() != "stored answer" || res.Relation != types.Success || res.Msg.Metadata.GetValue("threadId") != "t1" {
		t.Fatalf("%+v %v", res, err)
	}
	if len(rec.Events()) == 0 {
		t.Fatal("no events streamed")
	}
	if _, err := s.RunChain(context.Background(), "nope", "hi", nil, nil); !errors.Is(err, ErrNoChain) {
		t.Fatalf("missing chain: %v", err)
	}
	if f, ok := s.File("plain"); !ok || !strings.HasSuffix(f, "sub/plain.json") {
		t.Fatalf("file %q", f)
	}
}
