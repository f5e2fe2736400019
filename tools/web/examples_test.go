package web_test

import "testing"

// The configurations README.md shows build as they are (with the
// ${global.*} values RuleGo fills in written out).
func TestReadmeConfigsBuild(t *testing.T) {
	cases := []struct {
		name   string
		config map[string]any
	}{
		{"web_fetch", map[string]any{"allowHosts": []string{"*.wikipedia.org", "api.github.com"}, "timeout": "20s"}},
		{"web_fetch", map[string]any{"allowPrivate": []string{"10.20.0.0/16"}, "allowHosts": []string{"*.corp.example"}, "methods": []string{"GET"}}},
		{"web_fetch", map[string]any{
			"allowHosts": []string{"api.github.com", "*.atlassian.net"},
			"auth": map[string]any{
				"github": map[string]any{"hosts": []string{"api.github.com"}, "bearer": "ghp_exampleexampleexample"},
				"jira":   map[string]any{"hosts": []string{"*.atlassian.net"}, "basic": map[string]any{"username": "bot@example.com", "password": "jira-token-example"}},
			}}},
		{"web_search", map[string]any{"endpoint": "https://searx.example.org", "limit": 8}},
		{"web_search", map[string]any{"endpoint": "http://127.0.0.1:8888", "allowPrivate": []string{"127.0.0.1/32"},
			"params": map[string]string{"categories": "general", "safesearch": "1"}}},
	}
	for _, c := range cases {
		h, err := tryHarness(c.name, c.config)
		if err != nil {
			t.Errorf("%s %v: %v", c.name, c.config, err)
			continue
		}
		h.set.Close()
	}
}
