package mcptool

import (
	"errors"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

func TestModelName(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := []struct {
		prefix, remote, want string
	}{
		{"ev", "echo", "ev__echo"},
		{"ev", "get-sum", "ev__get-sum"},
		{"ev", "snake_case_name", "ev__snake_case_name"},
		{"gh", "files.read", "gh__files_read_" + shortHash("files.read")},
		{"gh", "files/read", "gh__files_read_" + shortHash("files/read")},
		{"gh", "résumé", "gh__r_sum__" + shortHash("résumé")},
		{"gh", "", "gh___" + shortHash("")},
		{"p", long, "p__" + long[:64-3-9] + "_" + shortHash(long)},
	}
	for _, tt := range tests {
		if got := modelName(tt.prefix, tt.remote); got != tt.want {
			t.Errorf("modelName(%q, %q) = %q, want %q", tt.prefix, tt.remote, got, tt.want)
		}
	}
}

func TestModelNamesAreValidAndDistinct(t *testing.T) {
	long := strings.Repeat("tool_", 20)
	remotes := []string{"a.b", "a/b", "a_b", "a b", "a__b", "a-b", "A_B", long, long + "1", long + "2", "日本", "中文", "x", "x.", "x_"}
	for _, prefix := range []string{"p", "a", "a_b", strings.Repeat("q", maxPrefixLen)} {
		seen := map[string]string{}
		for _, r := range remotes {
			name := modelName(prefix, r)
			if !tools.NamePattern.MatchString(name) {
				t.Errorf("%q is not a valid tool name", name)
			}
			if other, dup := seen[name]; dup {
				t.Errorf("%q and %q both map to %q", other, r, name)
			}
			seen[name] = r
			// The prefix can be read back: it ends at the first "__".
			if got, _, _ := strings.Cut(name, separator); got != prefix {
				t.Errorf("%q reads back as prefix %q, want %q", name, got, prefix)
			}
		}
	}
	// Across prefixes too: ("a", "b__c") and a prefix "a__b" cannot both
	// exist, since a prefix never contains "__".
	if _, err := modelPrefix("a__b", &target{}); err == nil {
		t.Error(`a prefix containing "__" was accepted`)
	}
}

func TestModelPrefix(t *testing.T) {
	tests := []struct {
		spec string
		t    target
		want string
		err  bool
	}{
		{spec: "fs", t: target{kind: kindStdio, command: "x"}, want: "fs"},
		{spec: "a__b", err: true},
		{spec: "trailing_", err: true},
		{spec: "has.dot", err: true},
		{spec: strings.Repeat("p", maxPrefixLen+1), err: true},
		{t: target{kind: kindSelf}, want: "self"},
		{t: target{kind: kindHTTP, url: "https://api.example.com:8443/mcp"}, want: "api_example_com"},
		{t: target{kind: kindHTTP, url: "http://[::1]:3000/mcp"}, want: "1"},
		{t: target{kind: kindStdio, command: "/opt/bin/mcp-server-everything"}, want: "mcp-server-everything"},
		{t: target{kind: kindStdio, command: "npx", args: []string{"-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/tmp"}}, want: "server-filesystem"},
		{t: target{kind: kindStdio, command: "uvx", args: []string{"mcp-server-fetch"}}, want: "mcp-server-fetch"},
		{t: target{kind: kindStdio, command: "python3", args: []string{"-u", "servers/weather.py"}}, want: "weather"},
		{t: target{kind: kindStdio, command: "./my__odd..server"}, want: "my_odd_server"},
	}
	for _, tt := range tests {
		got, err := modelPrefix(tt.spec, &tt.t)
		var ce *tools.ConfigError
		if tt.err {
			if !errors.As(err, &ce) || ce.Path != "name" {
				t.Errorf("modelPrefix(%q): got %q, %v; want a ConfigError at name", tt.spec, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("modelPrefix(%q, %+v) = %q, %v; want %q", tt.spec, tt.t, got, err, tt.want)
		}
		if strings.Contains(got, separator) || strings.HasSuffix(got, "_") || !tools.NamePattern.MatchString(got) {
			t.Errorf("derived prefix %q breaks the prefix rules", got)
		}
	}
}

func TestFilter(t *testing.T) {
	f := filter{"echo", "get-*", "{a,b}c", "mis*ing", "typo"}
	for name, want := range map[string]bool{"echo": true, "get-sum": true, "ac": true, "bc": true, "cc": false, "echo2": false} {
		if got := f.match(name); got != want {
			t.Errorf("match(%q) = %v", name, got)
		}
	}
	if !(filter{}).match("anything") {
		t.Error("an empty filter selects every tool")
	}
	// Only exact names are reported missing; globs may wait for tools the
	// server adds later.
	if got := f.unmatched([]string{"echo", "get-sum"}); strings.Join(got, ",") != "typo" {
		t.Errorf("unmatched: %v", got)
	}
}
