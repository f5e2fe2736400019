package mcptool

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/tools"
)

func TestConfigErrorsNameTheField(t *testing.T) {
	tests := []struct {
		config, path, msg string
	}{
		{`{}`, "server", "missing"},
		{`{"server":"self","command":"x"}`, "command", "either server or command"},
		{`{"server":"ftp://host/mcp"}`, "server", `unknown scheme "ftp"`},
		{`{"server":"ws://host/mcp"}`, "server", `unknown scheme "ws"`},
		{`{"server":"npx -y server"}`, "server", "is not"},
		{`{"server":"http:///mcp"}`, "server", "no host"},
		{`{"server":"stdio:"}`, "server", "names no command"},
		{`{"server":"stdio:srv --key $API_KEY"}`, "server", "cannot expand variables"},
		{`{"server":"stdio:srv $(cat key)"}`, "server", "cannot expand variables"},
		{`{"server":"stdio:srv | tee log"}`, "server", "one plain command"},
		{`{"server":"stdio:srv > out"}`, "server", "one plain command"},
		{`{"server":"stdio:KEY=1 srv"}`, "server", "one plain command"},
		{`{"server":"stdio:a; b"}`, "server", "exactly one command"},
		{`{"server":"stdio:a 'unclosed"}`, "server", "cannot split"},
		{`{"server":"self","args":["x"]}`, "args", "args go with command"},
		{`{"command":" npx"}`, "command", "spaces"},
		{`{"server":"self","headers":{"A":"b"}}`, "headers", "only apply to http"},
		{`{"server":"self","env":{"A":"b"}}`, "env", "only applies to stdio"},
		{`{"server":"http://h/mcp","cwd":"x"}`, "cwd", "only applies to stdio"},
		{`{"server":"stdio:srv","transport":"sse"}`, "transport", "only applies to http"},
		{`{"server":"http://h/mcp","transport":"websocket"}`, "transport", "unknown transport"},
		{`{"server":"http://h/mcp","headers":{"Bad Name":"x"}}`, "headers.Bad Name", "not a valid HTTP header name"},
		{`{"server":"http://h/mcp","headers":{"X-A":"a\r\nInjected: 1"}}`, "headers.X-A", "line breaks"},
		{`{"command":"srv","env":{"1BAD":"x"}}`, "env.1BAD", "not a valid variable name"},
		{`{"server":"self","tools":["ok","[unclosed"]}`, "tools[1]", "not a valid tool name or glob"},
		{`{"server":"self","tools":[""]}`, "tools[0]", "not a valid"},
		{`{"server":"self","timeout":0}`, "timeout", "longer than 0"},
		{`{"server":"self","connectTimeout":"0s"}`, "connectTimeout", "longer than 0"},
		{`{"server":"self","timeout":"soon"}`, "timeout", "duration"},
		{`{"server":"self","serverUrl":"http://h"}`, "serverUrl", "unknown field"},
		{`{"server":"self","tools":"echo"}`, "tools", "a string is not a list"},
	}
	for _, tt := range tests {
		_, err := parseConfig(json.RawMessage(tt.config), "/work")
		var ce *tools.ConfigError
		if !errors.As(err, &ce) || ce.Path != tt.path || !strings.Contains(ce.Msg, tt.msg) {
			t.Errorf("%s: got %v; want a ConfigError at %q containing %q", tt.config, err, tt.path, tt.msg)
		}
	}
}

func TestConfigTargets(t *testing.T) {
	home := os.Getenv("HOME")
	tests := []struct {
		config string
		want   target
	}{
		{`{"server":"self"}`, target{kind: kindSelf}},
		{`{"server":" https://mcp.example.com/mcp?x=1 ","headers":{"Authorization":"Bearer t"}}`,
			target{kind: kindHTTP, url: "https://mcp.example.com/mcp?x=1", transport: "auto", headers: map[string]string{"Authorization": "Bearer t"}}},
		{`{"server":"http://127.0.0.1:3001/sse","transport":"sse"}`, target{kind: kindHTTP, url: "http://127.0.0.1:3001/sse", transport: "sse"}},
		{`{"server":"stdio:npx -y '@scope/server x' \"a b\" c\\ d ~/data"}`,
			target{kind: kindStdio, command: "npx", args: []string{"-y", "@scope/server x", "a b", "c d", home + "/data"}, cwd: "/work"}},
		{`{"server":"stdio:srv '$NOT_EXPANDED'"}`, target{kind: kindStdio, command: "srv", args: []string{"$NOT_EXPANDED"}, cwd: "/work"}},
		{`{"command":"/bin/srv","args":["$LITERAL","two words"],"cwd":"sub","env":{"K":"v"}}`,
			target{kind: kindStdio, command: "/bin/srv", args: []string{"$LITERAL", "two words"}, cwd: "/work/sub", env: map[string]string{"K": "v"}}},
		{`{"command":"srv","cwd":"/abs"}`, target{kind: kindStdio, command: "srv", cwd: "/abs"}},
	}
	for _, tt := range tests {
		got, err := parseConfig(json.RawMessage(tt.config), "/work")
		if err != nil {
			t.Errorf("%s: %v", tt.config, err)
			continue
		}
		w := tt.want
		if got.kind != w.kind || got.url != w.url || got.transport != w.transport || got.command != w.command ||
			!slices.Equal(got.args, w.args) || got.cwd != w.cwd || len(got.env) != len(w.env) || len(got.headers) != len(w.headers) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.config, *got, w)
		}
		if got.timeout != 60*time.Second || got.connectTimeout != 10*time.Second {
			t.Errorf("%s: timeouts %s, %s", tt.config, got.timeout, got.connectTimeout)
		}
	}
	got, err := parseConfig(json.RawMessage(`{"server":"self","timeout":1500,"connectTimeout":"2s"}`), "")
	if err != nil || got.timeout != 1500*time.Millisecond || got.connectTimeout != 2*time.Second {
		t.Errorf("timeouts: %+v, %v", got, err)
	}
}

func TestSecretsAndDescription(t *testing.T) {
	tg, err := parseConfig(json.RawMessage(`{"server":"https://user:pw-in-url@h.example/mcp?key=k","headers":{"Authorization":"Bearer abc123","X-Api-Key":"k-456"}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	got := tg.secrets()
	for _, want := range []string{"Bearer abc123", "abc123", "k-456", "pw-in-url"} {
		if !slices.Contains(got, want) {
			t.Errorf("secrets %v lack %q", got, want)
		}
	}
	if d := tg.describe(); d != "https://h.example/mcp" {
		t.Errorf("describe shows %q", d)
	}
	stdio, _ := parseConfig(json.RawMessage(`{"command":"/usr/bin/srv","args":["--token","secret"]}`), "")
	if d := stdio.describe(); d != "stdio: srv" {
		t.Errorf("describe shows %q", d)
	}
}

func TestConfigSchemaDocumentsEveryField(t *testing.T) {
	var schema struct {
		Properties map[string]struct {
			Description string          `json:"description"`
			Default     json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(ConfigSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"server", "command", "args", "cwd", "env", "headers", "transport", "tools", "timeout", "connectTimeout", "required"} {
		if p, ok := schema.Properties[field]; !ok || p.Description == "" {
			t.Errorf("%s is not documented", field)
		}
	}
	if string(schema.Properties["timeout"].Default) != `"1m0s"` || string(schema.Properties["transport"].Default) != `"auto"` {
		t.Errorf("defaults: %s, %s", schema.Properties["timeout"].Default, schema.Properties["transport"].Default)
	}
}

func TestServerEnvIsAnAllowlist(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	t.Setenv("LANG", "C.UTF-8")
	env := serverEnv(map[string]string{"EXTRA": "1", "LANG": "fr_FR.UTF-8"})
	joined := "\n" + strings.Join(env, "\n") + "\n"
	if strings.Contains(joined, "OPENAI_API_KEY") {
		t.Error("a variable outside the allowlist was inherited")
	}
	for _, want := range []string{"\nEXTRA=1\n", "\nLANG=fr_FR.UTF-8\n", "\nPATH="} {
		if !strings.Contains(joined, want) {
			t.Errorf("env lacks %q: %v", want, env)
		}
	}
	if !slices.IsSorted(env) {
		t.Error("env is not sorted")
	}
}

func TestCheckSpecDoesNotConnect(t *testing.T) {
	err := CheckSpec(tools.Spec{Type: tools.TypeMCP, Name: "a__b", Config: json.RawMessage(`{"server":"http://192.0.2.1/mcp"}`)})
	var ce *tools.ConfigError
	if !errors.As(err, &ce) || ce.Path != "name" {
		t.Errorf("bad prefix: %v", err)
	}
	err = CheckSpec(tools.Spec{Type: tools.TypeMCP, Config: json.RawMessage(`{"server":"stdio:srv $KEY"}`)})
	if !errors.As(err, &ce) || ce.Path != "config.server" {
		t.Errorf("bad server: %v", err)
	}
	// An unreachable server passes: nothing is dialled.
	if err := CheckSpec(tools.Spec{Type: tools.TypeMCP, Config: json.RawMessage(`{"server":"http://192.0.2.1/mcp"}`)}); err != nil {
		t.Errorf("valid spec: %v", err)
	}
}
