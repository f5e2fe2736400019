package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// newFloorEnv is newGovEnv's server with a sandbox floor and no policy.
func newFloorEnv(t *testing.T, script llmtest.Script, floor components.SandboxFloor, chains map[string]string) (*govEnv, string) {
	t.Helper()
	e := &govEnv{t: t, llm: llmtest.NewServer(t, script), ws: t.TempDir()}
	dir := t.TempDir()
	for id, dsl := range chains {
		if err := os.WriteFile(filepath.Join(dir, id+".json"), []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := WithGovernance(NewConfig(map[string]string{"llm_url": e.llm.URL, "api_key": "sk-test", "model": "test-model", "workspace": e.ws}),
		Governance{Sandbox: floor})
	var errs []error
	e.store, errs = OpenStore(dir, cfg)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(e.store.Close)
	e.base = serveLoopback(t, Handler(Options{Store: e.store}))
	return e, dir
}

var bashOff = map[string]any{"type": "builtin", "name": "bash", "config": map[string]any{"timeout": "10s", "sandbox": "off"}}

func (e *govEnv) put(id, dsl string) (int, apiError) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPut, e.base+"/api/v1/chains/"+id, strings.NewReader(dsl))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body apiError
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// A chain deployed over the API cannot lower the operator's sandbox floor;
// the 400 names the node, the tool, the path and the floor. The operator's
// switch lets it.
func TestSandboxFloorHoldsOverTheAPI(t *testing.T) {
	e, _ := newFloorEnv(t, llmtest.Always(llmtest.Reply("ok")), components.SandboxFloor{Mode: "best-effort"}, nil)
	code, body := e.put("escape", govAgent("escape", "You are escape.", map[string]any{"tools": []any{bashOff}}))
	if code != http.StatusBadRequest || len(body.Problems) != 1 || body.Problems[0].Path != "metadata.nodes[0].configuration.tools[0].config.sandbox" ||
		!strings.Contains(body.Problems[0].Message, `node "agent": the bash tool's commands would run with sandbox "off", below the operator's sandbox floor "best-effort"`) {
		t.Fatalf("%d %+v", code, body)
	}
	if _, ok := e.store.Engine("escape"); ok {
		t.Fatal("the chain was deployed")
	}

	allowing, _ := newFloorEnv(t, llmtest.Always(llmtest.Reply("ok")), components.SandboxFloor{Mode: "best-effort", AllowLower: true}, nil)
	if code, body := allowing.put("escape", govAgent("escape", "You are escape.", map[string]any{"tools": []any{bashOff}})); code != http.StatusOK {
		t.Fatalf("with --allow-sandbox-off: %d %+v", code, body)
	}
}

// A chain written into the watched folder cannot lower the floor either:
// it is not deployed, and the chains API says why.
func TestSandboxFloorHoldsForTheWatchedFolder(t *testing.T) {
	e, dir := newFloorEnv(t, llmtest.Always(llmtest.Reply("ok")), components.SandboxFloor{Mode: "required"}, nil)
	if err := e.store.Watch(); err != nil {
		t.Fatal(err)
	}
	soft := map[string]any{"type": "builtin", "name": "bash", "config": map[string]any{"sandbox": "best-effort"}}
	if err := os.WriteFile(filepath.Join(dir, "soft.json"), []byte(govAgent("soft", "You are soft.", map[string]any{"tools": []any{soft}})), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var list []ChainInfo
		resp, err := http.Get(e.base + "/api/v1/chains")
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if len(list) == 1 && list[0].ID == "soft" {
			if list[0].Deployed || !strings.Contains(list[0].Error, `sandbox "best-effort", below the operator's sandbox floor "required"`) {
				t.Fatalf("%+v", list[0])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the file was not seen: %+v", list)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// An agent with the self MCP server cannot save a chain that lowers the
// floor, nor one with more power than itself, and so cannot call such a
// chain in the same run; a chain within its own power it saves and calls.
func TestAgentSavesNoMorePowerThanItHas(t *testing.T) {
	save := func(id string, tools ...any) llmtest.ToolCall {
		dsl := govAgent(id, "You are "+id+".", map[string]any{"tools": tools})
		args, _ := json.Marshal(map[string]any{"id": id, "dsl": dsl})
		return llmtest.Call("self__save_rule_chain", string(args))
	}
	wider := map[string]any{"type": "builtin", "name": "bash", "config": map[string]any{"timeout": "10s", "network": "any"}}
	turns := []llmtest.Response{
		llmtest.Calls(save("escape", bashOff)),
		llmtest.Calls(save("wider", wider)),
		llmtest.Calls(save("fetcher", map[string]any{"type": "builtin", "name": "web_fetch"})),
		llmtest.Calls(save("fine", govBash)),
		llmtest.Calls(llmtest.Call("self__fine", `{"message":"hi"}`), llmtest.Call("self__escape", `{"message":"hi"}`)),
		llmtest.Reply("built"),
	}
	script := llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains("You are fine."), Script: llmtest.Always(llmtest.Reply("fine ran"))},
		llmtest.Rule{Match: llmtest.SystemContains("You are builder."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			return turns[min(r.Turn(), len(turns)-1)]
		})},
	)
	e, _ := newFloorEnv(t, script, components.SandboxFloor{Mode: "best-effort"}, map[string]string{
		"builder": govAgent("builder", "You are builder.", map[string]any{"maxStep": 8,
			"tools": []any{govBash, map[string]any{"type": "mcp", "name": "self", "config": map[string]any{"server": "self"}}}}),
	})
	if ans := e.run("builder", "build", "", nil); ans.Outcome != OutcomeSuccess || ans.Data != "built" {
		t.Fatalf("run %+v", ans)
	}
	results := map[string]string{}
	for _, r := range e.llm.Requests() {
		if !strings.Contains(r.System(), "You are builder.") {
			continue
		}
		for _, m := range r.Messages {
			if m.Role == "tool" {
				results[m.ToolCallID] = m.Content
			}
		}
	}
	var all []string
	for _, c := range results {
		all = append(all, c)
	}
	joined := strings.Join(all, "\n---\n")
	for _, want := range []string{
		`below the operator's sandbox floor "best-effort"`,
		`network: a wider network`,
		`has no web_fetch tool`,
		`Chain "fine" deployed`,
		"fine ran",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("no tool result says %q:\n%s", want, joined)
		}
	}
	for _, id := range []string{"escape", "wider", "fetcher"} {
		if _, ok := e.store.Engine(id); ok {
			t.Errorf("%s was deployed", id)
		}
	}
	if _, ok := e.store.Engine("fine"); !ok {
		t.Error("fine was not deployed")
	}
}

// The floor is the higher of --sandbox and the policy file's mode; the
// file's allowOff decides over --allow-sandbox-off.
func TestFloorCombinesTheFlagsAndThePolicyFile(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		flag  string
		allow bool
		rule  *SandboxRule
		want  components.SandboxFloor
		err   string
	}{
		{"", false, nil, components.SandboxFloor{Mode: "best-effort"}, ""},
		{"required", false, nil, components.SandboxFloor{Mode: "required"}, ""},
		{"off", false, nil, components.SandboxFloor{Mode: "off"}, ""},
		{"", true, nil, components.SandboxFloor{Mode: "best-effort", AllowLower: true}, ""},
		{"best-effort", false, &SandboxRule{Mode: "required"}, components.SandboxFloor{Mode: "required"}, ""},
		{"required", false, &SandboxRule{Mode: "off"}, components.SandboxFloor{Mode: "required"}, ""},
		{"", false, &SandboxRule{AllowOff: &yes}, components.SandboxFloor{Mode: "best-effort", AllowLower: true}, ""},
		{"", true, &SandboxRule{AllowOff: &no}, components.SandboxFloor{}, `the policy file forbids it ("sandbox": {"allowOff": false})`},
		{"sometimes", false, nil, components.SandboxFloor{}, "--sandbox"},
	}
	for _, c := range cases {
		got, err := Floor(c.flag, c.allow, c.rule)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%+v: err %v, want %q", c, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%+v: %+v %v", c, got, err)
		}
	}
	f, err := LoadPolicyFile(`{"sandbox": {"mode": "required", "allowOff": false}}`)
	if err != nil || f.Tools != nil || f.Sandbox == nil || f.Sandbox.Mode != "required" || *f.Sandbox.AllowOff {
		t.Fatalf("%+v %v", f, err)
	}
	if f, err = LoadPolicyFile(`{"deny": ["bash"], "sandbox": {"mode": "required"}}`); err != nil || f.Tools == nil {
		t.Fatalf("%+v %v", f, err)
	}
	for arg, want := range map[string]string{
		`{"sandbox": {"mode": "strict"}}`: `policy: sandbox.mode: must be "required", "best-effort" or "off", got "strict"`,
		`{"sandbox": {"allowOf": true}}`:  `policy: sandbox.allowOf: unknown field (did you mean "allowOff"?)`,
	} {
		if _, err := LoadPolicyFile(arg); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", arg, err, want)
		}
	}
}
