package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRoutesAndToken(t *testing.T) {
	s, errs := OpenStore("../chains", NewConfig(nil))
	defer s.Close()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, token := range []string{"", "s3cret"} {
		srv := httptest.NewServer(Handler(Options{Store: s, Token: token}))
		get := func(path, auth string) (int, string) {
			req, _ := http.NewRequest("GET", srv.URL+path, nil)
			if auth != "" {
				req.Header.Set("Authorization", "Bearer "+auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if code, body := get("/healthz", ""); code != 200 || !strings.Contains(body, `"status":"ok"`) {
			t.Fatalf("healthz %d %s", code, body)
		}
		for _, path := range []string{"/", "/api/v1/chains", "/metrics"} {
			code, body := get(path, token)
			if code != 200 {
				t.Fatalf("token %q %s: %d %s", token, path, code, body)
			}
			switch path {
			case "/":
				if !strings.Contains(body, "<title>ruleagent</title>") {
					t.Fatalf("start page: %s", body)
				}
			case "/api/v1/chains":
				var list []ChainInfo
				if json.Unmarshal([]byte(body), &list) != nil || len(list) < 6 {
					t.Fatalf("chains: %s", body)
				}
			case "/metrics":
				if !strings.Contains(body, "ruleagent_tool_calls_total") && !strings.Contains(body, "go_goroutines") {
					t.Fatalf("metrics: %.300s", body)
				}
			}
			if token != "" && path != "/" {
				if code, _ := get(path, ""); code != http.StatusUnauthorized {
					t.Fatalf("%s without the token: %d", path, code)
				}
				if code, _ := get(path, "wrong"); code != http.StatusUnauthorized {
					t.Fatalf("%s with a wrong token: %d", path, code)
				}
			}
		}
		srv.Close()
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "localhost:1": true, "[::1]:80": true,
		":8080": false, "0.0.0.0:80": false, "10.0.0.1:80": false, "example.com:80": false} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("%s: %v", addr, got)
		}
	}
}
