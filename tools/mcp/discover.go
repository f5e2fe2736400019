package mcptool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// probeModern asks a streamable HTTP server, with one stateless
// server/discover POST, whether it speaks the 2026-07-28 revision. It
// decides how the client connects: a modern server is spoken to without
// sessions, an older one through the initialize handshake with its GET
// stream open, which a transport opens only when made for it. Asking first,
// rather than connecting and then reconnecting, starts a single session on
// a server that allows only one.
//
// A server that answers with its supported versions, even in an error
// (-32022), is modern when one of them is. Any other answer (a 4xx, a
// JSON-RPC error, a result without versions) means an older server. No
// answer in time leaves it unknown (known is false): a busy server, or one
// that holds unknown methods. Only a failure to reach the server at all is
// an error.
func (d *dialer) probeModern(ctx context.Context) (modern, known bool, err error) {
	// Half the connect time: a busy server may take a while, and what is
	// left must do for the handshake.
	ctx, cancel := context.WithTimeout(ctx, d.t.connectTimeout/2)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "ruleagent-discover", "method": string(mcp.MethodServerDiscover),
		"params": map[string]any{"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:    mcp.LATEST_PROTOCOL_VERSION,
			mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{}},
			mcp.MetaKeyClientInfo:         map[string]any{"name": "ruleagent", "version": clientVersion()},
		}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.t.url, bytes.NewReader(body))
	if err != nil {
		return false, false, err
	}
	for k, v := range d.t.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_PROTOCOL_VERSION)
	req.Header.Set("Mcp-Method", string(mcp.MethodServerDiscover))
	resp, err := d.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, false, nil
		}
		return false, false, fmt.Errorf("reaching the server: %w", err)
	}
	defer resp.Body.Close()
	msg := firstMessage(resp)
	var reply struct {
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
		Error struct {
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		} `json:"error"`
	}
	if msg == nil && ctx.Err() != nil {
		return false, false, nil
	}
	if json.Unmarshal(msg, &reply) != nil {
		return false, true, nil
	}
	for _, v := range append(reply.Result.SupportedVersions, reply.Error.Data.Supported...) {
		if mcp.IsModernProtocol(v) && mcp.IsValidProtocolVersion(v) {
			return true, true, nil
		}
	}
	return false, true, nil
}

// firstMessage is the JSON-RPC message of a response: its JSON body, or the
// first data of an event stream.
func firstMessage(resp *http.Response) []byte {
	r := io.LimitReader(resp.Body, 1<<20)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(r)
		return b
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			return []byte(strings.TrimSpace(data))
		}
	}
	return nil
}
