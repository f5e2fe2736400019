package mcptool

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/tools"
)

// toResult maps an MCP tool result into what the model and clients see.
//
//   - Text content is joined, one item per line, into Text.
//   - Images and audio become Parts (base64 data and MIME type), with a short
//     placeholder such as "[image: image/png, 12 KB]" in Text: the model
//     reads text, and a client that can show media finds it in Parts.
//   - An embedded text resource adds a "[resource: uri]" line and its text;
//     a blob resource becomes a Part with its URI and MIME type, and a
//     placeholder line.
//   - A resource link becomes a line naming it (title or name, URI, MIME
//     type, size, description) and a Part of type "resource_link" with its
//     URI and MIME type, for clients that can fetch it.
//   - structuredContent, any JSON value (2026-07-28), goes into Structured
//     as the server sent it, and into Text as JSON when the result has no
//     text content of its own. A null is no structured content.
//   - isError becomes IsError.
func toResult(r *mcp.CallToolResult) tools.Result {
	var (
		lines   []string
		parts   []tools.Part
		hasText bool
	)
	for _, c := range r.Content {
		switch v := deref(c).(type) {
		case mcp.TextContent:
			lines = append(lines, v.Text)
			hasText = true
		case mcp.ImageContent:
			parts = append(parts, tools.Part{Type: "image", MimeType: v.MIMEType, Data: v.Data})
			lines = append(lines, placeholder("image", v.MIMEType, v.Data))
		case mcp.AudioContent:
			parts = append(parts, tools.Part{Type: "audio", MimeType: v.MIMEType, Data: v.Data})
			lines = append(lines, placeholder("audio", v.MIMEType, v.Data))
		case mcp.EmbeddedResource:
			l, p := embedded(v.Resource)
			lines = append(lines, l)
			if p != nil {
				parts = append(parts, *p)
			} else {
				hasText = true
			}
		case mcp.ResourceLink:
			lines = append(lines, linkLine(v))
			parts = append(parts, tools.Part{Type: "resource_link", URI: v.URI, MimeType: v.MIMEType, Text: cmp.Or(v.Title, v.Name)})
		default:
			// A content type this client does not know: pass it on as JSON
			// rather than lose it.
			b, _ := json.Marshal(c)
			lines = append(lines, string(b))
		}
	}
	res := tools.Result{Parts: parts, IsError: r.IsError, Structured: structured(r)}
	if !hasText && len(res.Structured) > 0 {
		lines = append(lines, string(res.Structured))
	}
	res.Text = strings.Join(lines, "\n")
	return res
}

// deref lets the switch in toResult see content that a server library
// handed over by pointer.
func deref(c mcp.Content) mcp.Content {
	switch v := c.(type) {
	case *mcp.TextContent:
		return *v
	case *mcp.ImageContent:
		return *v
	case *mcp.AudioContent:
		return *v
	case *mcp.EmbeddedResource:
		return *v
	case *mcp.ResourceLink:
		return *v
	}
	return c
}

func embedded(rc mcp.ResourceContents) (string, *tools.Part) {
	switch v := rc.(type) {
	case mcp.TextResourceContents:
		return "[resource: " + v.URI + "]\n" + v.Text, nil
	case *mcp.TextResourceContents:
		return "[resource: " + v.URI + "]\n" + v.Text, nil
	case mcp.BlobResourceContents:
		return blobLine(v), &tools.Part{Type: "resource", URI: v.URI, MimeType: v.MIMEType, Data: v.Blob}
	case *mcp.BlobResourceContents:
		return blobLine(*v), &tools.Part{Type: "resource", URI: v.URI, MimeType: v.MIMEType, Data: v.Blob}
	}
	b, _ := json.Marshal(rc)
	return "[resource: " + string(b) + "]", nil
}

func blobLine(v mcp.BlobResourceContents) string {
	mime := v.MIMEType
	if mime == "" {
		mime = "application/octet-stream"
	}
	return fmt.Sprintf("[resource: %s, %s, %s]", v.URI, mime, size(v.Blob))
}

func linkLine(v mcp.ResourceLink) string {
	name := v.Title
	if name == "" {
		name = v.Name
	}
	fields := []string{name, v.URI}
	if v.MIMEType != "" {
		fields = append(fields, v.MIMEType)
	}
	if v.Size != nil {
		fields = append(fields, byteSize(int(*v.Size)))
	}
	line := "[resource link: " + strings.Join(fields, ", ") + "]"
	if v.Description != "" {
		line += " " + v.Description
	}
	return line
}

func placeholder(kind, mime, data string) string {
	return fmt.Sprintf("[%s: %s, %s]", kind, mime, size(data))
}

// size is the decoded size of base64 data, for people.
func size(b64 string) string {
	n := len(b64) / 4 * 3
	switch {
	case strings.HasSuffix(b64, "=="):
		n -= 2
	case strings.HasSuffix(b64, "="):
		n--
	}
	return byteSize(n)
}

// byteSize is n bytes, for people.
func byteSize(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1024*1024:
		return fmt.Sprintf("%d KB", (n+512)/1024)
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
	}
}

// structured is the result's structuredContent as the server sent it.
func structured(r *mcp.CallToolResult) json.RawMessage {
	if raw := bytes.TrimSpace(r.RawStructuredContent); len(raw) > 0 {
		if string(raw) == "null" {
			return nil
		}
		return raw
	}
	if r.StructuredContent == nil {
		return nil
	}
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		return nil
	}
	return b
}
