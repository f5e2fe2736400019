package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// hostGet sends GET path to addr with the Host header host.
func hostGet(t *testing.T, addr, host, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// serve answers localhost, IP addresses, the names of --allowed-hosts (or
// $RULEAGENT_ALLOWED_HOSTS when the flag is not given) and the name --addr
// binds; a rebound name gets 403, which says how to allow a name.
func TestServeAllowedHosts(t *testing.T) {
	// A copy: a request the guard should refuse could not change the
	// repository's chains.
	chains := filepath.Join(copyChains(t), "chains")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	t.Setenv("RULEAGENT_ALLOWED_HOSTS", "from-env.example")
	addr, _, _, _ := serve(t, ctx, "--chains", chains, "--allowed-hosts", "agents.example.com,*.corp.example")
	port := addr[strings.LastIndex(addr, ":"):]
	for host, want := range map[string]int{
		addr: 200, "localhost" + port: 200, "agents.example.com": 200, "AGENTS.example.com.": 200, "a.corp.example" + port: 200,
		"corp.example": 403, "attacker.example" + port: 403, "from-env.example": 403,
	} {
		code, body := hostGet(t, addr, host, "/api/v1/chains")
		if code != want {
			t.Errorf("Host %s: %d %.200s, want %d", host, code, body, want)
		}
		if want == 403 && !strings.Contains(body, "--allowed-hosts") {
			t.Errorf("Host %s: the refusal does not say how to allow a name: %s", host, body)
		}
	}
	stop()

	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	addr, _, _, _ = serve(t, ctx2, "--chains", chains)
	if code, body := hostGet(t, addr, "from-env.example", "/api/v1/chains"); code != 200 {
		t.Errorf("RULEAGENT_ALLOWED_HOSTS: %d %.200s", code, body)
	}
	if code, _ := hostGet(t, addr, "agents.example.com", "/api/v1/chains"); code != 403 {
		t.Errorf("a name of another server's flags: %d", code)
	}
}

// The name --addr binds is one the server answers to.
func TestAddrName(t *testing.T) {
	for addr, want := range map[string]string{"myhost.lan:8080": "myhost.lan", "127.0.0.1:8080": "", ":8080": "", "[::1]:80": "", "0.0.0.0:1": ""} {
		got := strings.Join(addrName(addr), ",")
		if got != want {
			t.Errorf("%s: %q, want %q", addr, got, want)
		}
	}
}
