package mcptool

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/tools"
)

func TestStreamableHTTPReconnectsAfterRestart(t *testing.T) {
	p := needPeers(t)
	peer := startHTTPPeer(t, p, "streamableHttp")
	secrets := &secretLog{}
	set, err := build(t, Options{}, fmt.Sprintf(`[{"type":"mcp","config":{
		"server":"http://%s/mcp", "tools":["echo","get-sum"],
		"headers":{"Authorization":"Bearer token-for-the-test-42"},
		"timeout":"5s", "connectTimeout":"3s"}}]`, peer.addr()), secrets)
	if err != nil {
		t.Fatal(err)
	}
	// No name: the prefix is the host.
	if got := strings.Join(set.Names(), ","); got != "127_0_0_1__echo,127_0_0_1__get-sum" {
		t.Fatalf("names: %s", got)
	}
	if !secrets.has("Bearer token-for-the-test-42") || !secrets.has("token-for-the-test-42") {
		t.Errorf("header value not registered as a secret: %v", secrets.values)
	}
	c := connOf(t, set, "127_0_0_1__echo")
	if via := c.liveSession().via; via != "streamable HTTP" {
		t.Errorf("transport: %s", via)
	}
	if got := mustInvoke(t, set, "127_0_0_1__get-sum", `{"a":20,"b":22}`).Content; !strings.Contains(got, "42") {
		t.Errorf("get-sum: %q", got)
	}

	peer.kill()
	start := time.Now()
	o := invoke(set, "127_0_0_1__echo", `{"message":"anyone?"}`)
	if !o.IsError || !errors.Is(o.Err, tools.ErrExecutionFailed) || time.Since(start) > 5*time.Second {
		t.Fatalf("call to a dead server: %+v after %s", o, time.Since(start))
	}
	peer.start()
	if got := mustInvoke(t, set, "127_0_0_1__echo", `{"message":"back"}`).Content; got != "Echo: back" {
		t.Errorf("after restart: %q", got)
	}

	// Restarted while idle: the server no longer knows the session and
	// refuses the call unseen, so it is sent again on a new session.
	peer.kill()
	peer.start()
	if got := mustInvoke(t, set, "127_0_0_1__echo", `{"message":"idle restart"}`).Content; got != "Echo: idle restart" {
		t.Errorf("after an idle restart: %q", got)
	}
}

func TestLegacySSEThroughFallback(t *testing.T) {
	p := needPeers(t)
	peer := startHTTPPeer(t, p, "sse")
	before := runtime.NumGoroutine()
	set := mustBuild(t, Options{}, fmt.Sprintf(`[{"type":"mcp","name":"old","config":{"server":"http://%s/sse","tools":["echo"]}}]`, peer.addr()))
	c := connOf(t, set, "old__echo")
	if via := c.liveSession().via; via != "SSE" {
		t.Fatalf("transport: %s", via)
	}
	if got := mustInvoke(t, set, "old__echo", `{"message":"legacy"}`).Content; got != "Echo: legacy" {
		t.Errorf("echo: %q", got)
	}
	// The fallback is remembered: reconnecting goes straight to SSE.
	c.drop(c.liveSession(), errors.New("test"))
	mustInvoke(t, set, "old__echo", `{"message":"again"}`)
	if via := c.liveSession().via; via != "SSE" || !c.dialer.sse.Load() {
		t.Errorf("reconnected via %s", via)
	}
	set.Close()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before })
}

func TestStreamableOnlyDoesNotFallBack(t *testing.T) {
	p := needPeers(t)
	peer := startHTTPPeer(t, p, "sse")
	_, err := build(t, Options{}, fmt.Sprintf(`[{"type":"mcp","name":"old","config":{"server":"http://%s/sse","transport":"streamable"}}]`, peer.addr()), nil)
	var ce *tools.ConfigError
	if !errors.As(err, &ce) || ce.Path != "tools[0].config.server" || !strings.Contains(ce.Msg, `set transport to "auto" or "sse"`) {
		t.Fatalf("got %v", err)
	}
}
