package mcptool

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/tools"
)

// wire decodes a tools/call result the way the client receives it.
func wire(t *testing.T, raw string) *mcp.CallToolResult {
	t.Helper()
	m := json.RawMessage(raw)
	r, err := mcp.ParseCallToolResult(&m)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return r
}

func TestToResult(t *testing.T) {
	png := base64.StdEncoding.EncodeToString(make([]byte, 12*1024))
	wav := base64.StdEncoding.EncodeToString(make([]byte, 100))
	tests := []struct {
		name  string
		raw   string
		text  string
		parts []tools.Part
		st    string
		isErr bool
	}{
		{name: "texts are joined", raw: `{"content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}`, text: "one\ntwo"},
		{name: "image", raw: `{"content":[{"type":"text","text":"Here:"},{"type":"image","mimeType":"image/png","data":"` + png + `"}]}`,
			text: "Here:\n[image: image/png, 12 KB]", parts: []tools.Part{{Type: "image", MimeType: "image/png", Data: png}}},
		{name: "audio", raw: `{"content":[{"type":"audio","mimeType":"audio/wav","data":"` + wav + `"}]}`,
			text: "[audio: audio/wav, 100 bytes]", parts: []tools.Part{{Type: "audio", MimeType: "audio/wav", Data: wav}}},
		{name: "text resource", raw: `{"content":[{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"hello"}}]}`,
			text: "[resource: file:///a.txt]\nhello"},
		{name: "blob resource", raw: `{"content":[{"type":"resource","resource":{"uri":"file:///a.bin","blob":"` + wav + `"}}]}`,
			text: "[resource: file:///a.bin, application/octet-stream, 100 bytes]", parts: []tools.Part{{Type: "resource", URI: "file:///a.bin", Data: wav}}},
		{name: "resource link", raw: `{"content":[{"type":"resource_link","uri":"demo://r/1","name":"r1","title":"Resource one","mimeType":"text/plain","description":"the first"}]}`,
			text: "[resource link: Resource one, demo://r/1, text/plain] the first", parts: []tools.Part{{Type: "resource_link", URI: "demo://r/1", MimeType: "text/plain", Text: "Resource one"}}},
		{name: "resource link with a size", raw: `{"content":[{"type":"resource_link","uri":"file:///big.csv","name":"big.csv","size":2048}]}`,
			text: "[resource link: big.csv, file:///big.csv, 2 KB]", parts: []tools.Part{{Type: "resource_link", URI: "file:///big.csv", Text: "big.csv"}}},
		{name: "structured array", raw: `{"content":[],"structuredContent":[1,"two",{"three":3}]}`,
			text: `[1,"two",{"three":3}]`, st: `[1,"two",{"three":3}]`},
		{name: "structured string", raw: `{"content":[],"structuredContent":"plain"}`, text: `"plain"`, st: `"plain"`},
		{name: "structured number keeps its digits", raw: `{"content":[],"structuredContent":12345678901234567890}`,
			text: `12345678901234567890`, st: `12345678901234567890`},
		{name: "structured false", raw: `{"content":[],"structuredContent":false}`, text: `false`, st: `false`},
		{name: "structured null is none", raw: `{"content":[],"structuredContent":null}`, text: ""},
		{name: "structured only", raw: `{"content":[],"structuredContent":{"temperature":21,"unit":"C"}}`,
			text: `{"temperature":21,"unit":"C"}`, st: `{"temperature":21,"unit":"C"}`},
		{name: "structured with text", raw: `{"content":[{"type":"text","text":"21 C"}],"structuredContent":{"t":21}}`,
			text: "21 C", st: `{"t":21}`},
		{name: "isError", raw: `{"content":[{"type":"text","text":"no such file"}],"isError":true}`, text: "no such file", isErr: true},
		{name: "empty", raw: `{"content":[]}`, text: ""},
	}
	for _, tt := range tests {
		got := toResult(wire(t, tt.raw))
		if got.Text != tt.text || got.IsError != tt.isErr || string(got.Structured) != tt.st || len(got.Parts) != len(tt.parts) {
			t.Errorf("%s: got %+v", tt.name, got)
			continue
		}
		for i := range tt.parts {
			if got.Parts[i] != tt.parts[i] {
				t.Errorf("%s: part %d = %+v, want %+v", tt.name, i, got.Parts[i], tt.parts[i])
			}
		}
	}
}

func TestToResultFromServerValues(t *testing.T) {
	// An in-process result can hold content by pointer.
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Type: "text", Text: "by pointer"}}, StructuredContent: map[string]int{"n": 1}}
	got := toResult(r)
	if got.Text != "by pointer" || string(got.Structured) != `{"n":1}` {
		t.Errorf("got %+v", got)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int]string{0: "0 bytes", 1: "1 bytes", 1023: "1023 bytes", 1024: "1 KB", 5 << 20: "5.0 MB"} {
		if got := size(base64.StdEncoding.EncodeToString(make([]byte, n))); !strings.HasPrefix(got, want) {
			t.Errorf("size(%d bytes) = %q, want %q", n, got, want)
		}
	}
}
