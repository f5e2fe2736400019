package mcptool

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/tools"
)

func TestStdioServerEverything(t *testing.T) {
	p := needPeers(t)
	t.Setenv("RULEAGENT_TEST_NOT_INHERITED", "leak")
	secrets := &secretLog{}
	set, err := build(t, Options{}, `[{"type":"mcp","name":"ev","config":{
		"server":"stdio:`+filepath.Join(p.bin, "mcp-server-everything")+` stdio",
		"tools":["echo","get-*"],
		"env":{"MCP_TEST_TOKEN":"token-from-config-123"}}}]`, secrets)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ev__echo", "ev__get-annotated-message", "ev__get-env", "ev__get-resource-links",
		"ev__get-resource-reference", "ev__get-structured-content", "ev__get-sum", "ev__get-tiny-image"}
	got := set.Names()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("names:\n got %v\nwant %v", got, want)
	}
	if !secrets.has("token-from-config-123") {
		t.Errorf("the env value was not registered as a secret: %v", secrets.values)
	}

	if o := mustInvoke(t, set, "ev__echo", `{"message":"hi"}`); o.Content != "Echo: hi" {
		t.Errorf("echo: %q", o.Content)
	}
	if o := mustInvoke(t, set, "ev__get-sum", `{"a":2,"b":3}`); !strings.Contains(o.Content, "5") {
		t.Errorf("get-sum: %q", o.Content)
	}

	img := mustInvoke(t, set, "ev__get-tiny-image", `{}`)
	if len(img.Result.Parts) != 1 || img.Result.Parts[0].Type != "image" || img.Result.Parts[0].MimeType != "image/png" {
		t.Fatalf("image parts: %+v", img.Result.Parts)
	}
	png, err := base64.StdEncoding.DecodeString(img.Result.Parts[0].Data)
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Errorf("image data is not a base64 PNG (%v)", err)
	}
	if !strings.Contains(img.Content, "[image: image/png, ") || strings.Contains(img.Content, img.Result.Parts[0].Data[:20]) {
		t.Errorf("the model should read a placeholder, not the data: %q", img.Content)
	}

	sc := mustInvoke(t, set, "ev__get-structured-content", `{"location":"New York"}`)
	var weather struct {
		Temperature *float64 `json:"temperature"`
	}
	if err := json.Unmarshal(sc.Result.Structured, &weather); err != nil || weather.Temperature == nil {
		t.Errorf("structured content: %s (%v)", sc.Result.Structured, err)
	}

	ref := mustInvoke(t, set, "ev__get-resource-reference", `{}`)
	if !strings.Contains(ref.Content, "[resource: demo://resource/dynamic/text/1]\nResource 1:") {
		t.Errorf("embedded text resource: %q", ref.Content)
	}
	links := mustInvoke(t, set, "ev__get-resource-links", `{"count":2}`)
	if strings.Count(links.Content, "[resource link: ") != 2 {
		t.Errorf("resource links: %q", links.Content)
	}

	// The server's environment is the allowlist plus env.
	env := mustInvoke(t, set, "ev__get-env", `{}`)
	if !strings.Contains(env.Content, "token-from-config-123") || !strings.Contains(env.Content, `"PATH"`) {
		t.Errorf("config env or PATH missing from the server's environment: %.300s", env.Content)
	}
	if strings.Contains(env.Content, "RULEAGENT_TEST_NOT_INHERITED") {
		t.Errorf("a variable outside the allowlist reached the server")
	}

	// The wrapper refuses arguments that break the schema before they
	// reach the server; called directly, the server reports isError.
	res, err := set.Lookup("ev__get-sum").Tool.Call(context.Background(), json.RawMessage(`{"a":"two"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Text, "expected number") {
		t.Errorf("isError: %+v, %v", res, err)
	}
}

func TestStdioServerFilesystem(t *testing.T) {
	p := needPeers(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("first line\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	set := mustBuild(t, Options{}, `[{"type":"mcp","config":{
		"command":`+jsonString(filepath.Join(p.bin, "mcp-server-filesystem"))+`,
		"args":[`+jsonString(dir)+`],
		"tools":["read_text_file","list_allowed_directories"]}}]`)
	// No name: the prefix comes from the program.
	if got := strings.Join(set.Names(), ","); got != "mcp-server-filesystem__read_text_file,mcp-server-filesystem__list_allowed_directories" {
		t.Fatalf("names: %s", got)
	}
	o := mustInvoke(t, set, "mcp-server-filesystem__read_text_file", `{"path":`+jsonString(file)+`}`)
	if o.Content != "first line\nsecond line\n" {
		t.Errorf("read_text_file: %q", o.Content)
	}
	outside := invoke(set, "mcp-server-filesystem__read_text_file", `{"path":"/etc/hostname"}`)
	if !outside.IsError || !strings.Contains(outside.Content, "denied") {
		t.Errorf("reading outside the allowed folder: %+v", outside)
	}
}

func TestStdioServerDiesAndIsRespawned(t *testing.T) {
	p := needPeers(t)
	set := mustBuild(t, Options{}, `[{"type":"mcp","name":"ev","config":{
		"server":"stdio:`+filepath.Join(p.bin, "mcp-server-everything")+`",
		"tools":["echo","trigger-long-running-operation"], "timeout":"20s"}}]`)
	c := connOf(t, set, "ev__echo")
	mustInvoke(t, set, "ev__echo", `{"message":"before"}`)
	first := c.liveSession().proc.pid()

	// Kill the server in the middle of a 10-second call.
	go func() {
		time.Sleep(400 * time.Millisecond)
		_ = syscall.Kill(-first, syscall.SIGKILL)
	}()
	start := time.Now()
	o := invoke(set, "ev__trigger-long-running-operation", `{"duration":10,"steps":10}`)
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("the call on a dead server took %s", elapsed)
	}
	if !o.IsError || !errors.Is(o.Err, tools.ErrExecutionFailed) || !strings.Contains(o.Content, "was lost") {
		t.Fatalf("call on a killed server: %+v", o)
	}

	// The next call starts the server again.
	if got := mustInvoke(t, set, "ev__echo", `{"message":"after"}`).Content; got != "Echo: after" {
		t.Errorf("after respawn: %q", got)
	}
	second := c.liveSession().proc.pid()
	if second == first || second == 0 {
		t.Errorf("pid before %d, after %d", first, second)
	}
	if err := syscall.Kill(first, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the killed server %d is still there (%v)", first, err)
	}

	// A server that dies while idle is noticed before the next call,
	// which then just works.
	_ = syscall.Kill(-second, syscall.SIGKILL)
	waitFor(t, func() bool { return !c.liveSession().proc.alive() })
	if got := mustInvoke(t, set, "ev__echo", `{"message":"again"}`).Content; got != "Echo: again" {
		t.Errorf("after an idle death: %q", got)
	}
}

func TestCallTimeoutKeepsTheConnection(t *testing.T) {
	p := needPeers(t)
	set := mustBuild(t, Options{}, `[{"type":"mcp","name":"ev","config":{
		"server":"stdio:`+filepath.Join(p.bin, "mcp-server-everything")+`",
		"tools":["echo","trigger-long-running-operation"], "timeout":"300ms"}}]`)
	c := connOf(t, set, "ev__echo")
	pid := c.liveSession().proc.pid()
	start := time.Now()
	o := invoke(set, "ev__trigger-long-running-operation", `{"duration":3,"steps":3}`)
	if !errors.Is(o.Err, tools.ErrTimeout) || time.Since(start) > 2*time.Second {
		t.Fatalf("slow call: %+v after %s", o, time.Since(start))
	}
	// The server still answers a ping, so the connection is kept.
	mustInvoke(t, set, "ev__echo", `{"message":"still there"}`)
	if got := c.liveSession().proc.pid(); got != pid {
		t.Errorf("the server was restarted after a timeout (pid %d, then %d)", pid, got)
	}
}

func TestCloseStopsTheServerAndItsGoroutines(t *testing.T) {
	p := needPeers(t)
	before := runtime.NumGoroutine()
	set, err := build(t, Options{}, `[{"type":"mcp","name":"ev","config":{
		"server":"stdio:`+filepath.Join(p.bin, "mcp-server-everything")+`","tools":["echo","trigger-long-running-operation"]}}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustInvoke(t, set, "ev__echo", `{"message":"hi"}`)
	pid := connOf(t, set, "ev__echo").liveSession().proc.pid()
	// Close while a call is running: the call ends too. (The server does
	// not exit on its stdin closing while the operation runs, so Close
	// goes on to SIGTERM.)
	done := make(chan tools.Outcome, 1)
	go func() { done <- invoke(set, "ev__trigger-long-running-operation", `{"duration":10,"steps":10}`) }()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("Close took %s", elapsed)
	}
	select {
	case o := <-done:
		if !o.IsError {
			t.Errorf("call interrupted by Close: %+v", o)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the call outlived Close")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server %d still exists after Close (%v)", pid, err)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d still exists after Close (%v)", pid, err)
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before })
	// A call after Close fails cleanly.
	if o := invoke(set, "ev__echo", `{"message":"late"}`); !o.IsError {
		t.Errorf("call after Close: %+v", o)
	}
}

func TestCloseKillsWhatTheServerStarted(t *testing.T) {
	p := needPeers(t)
	pidFile := filepath.Join(t.TempDir(), "helper.pid")
	// The server leaves a helper behind that shares its stderr and ignores
	// the closing of stdin, as servers started through npx or a shell do.
	set := mustBuild(t, Options{}, `[{"type":"mcp","name":"ev","config":{
		"server":"stdio:sh -c 'sleep 300 & echo $! > `+pidFile+`; exec `+filepath.Join(p.bin, "mcp-server-everything")+`'",
		"tools":["echo"]}}]`)
	helper := readPID(t, pidFile)
	mustInvoke(t, set, "ev__echo", `{"message":"hi"}`)
	pid := connOf(t, set, "ev__echo").liveSession().proc.pid()
	// The server exits when its stdin closes; the helper is still there.
	set.Close()
	// Gone as Close returns, give or take the kernel's last steps of exit.
	waitFor(t, func() bool { return processGone(pid) && processGone(helper) })
}

func TestStdioStartFailureNamesTheServer(t *testing.T) {
	_, err := build(t, Options{}, `[{"type":"mcp","name":"x","config":{"command":"/nonexistent/mcp-server","connectTimeout":"2s"}}]`, nil)
	var ce *tools.ConfigError
	if !errors.As(err, &ce) || ce.Path != "tools[0].config.server" || !strings.Contains(ce.Msg, "/nonexistent/mcp-server") {
		t.Fatalf("got %v", err)
	}
	// A server that exits at once: its stderr explains why.
	_, err = build(t, Options{}, `[{"type":"mcp","name":"x","config":{"server":"stdio:sh -c 'echo missing API key >&2; exit 3'","connectTimeout":"5s","required":true}}]`, nil)
	if err == nil || !strings.Contains(err.Error(), "missing API key") {
		t.Fatalf("got %v", err)
	}
	// A program that never answers: the connect timeout ends the attempt,
	// and the program, which ignores its stdin closing, is terminated.
	pidFile := filepath.Join(t.TempDir(), "silent.pid")
	start := time.Now()
	_, err = build(t, Options{}, `[{"type":"mcp","name":"x","config":{"server":"stdio:sh -c 'echo $$ > `+pidFile+`; exec sleep 300'","connectTimeout":"500ms","required":true}}]`, nil)
	if !errors.Is(err, tools.ErrConfig) || !strings.Contains(err.Error(), "no connection within 500ms") || time.Since(start) > 3*time.Second {
		t.Fatalf("got %v after %s", err, time.Since(start))
	}
	if pid := readPID(t, pidFile); !processGone(pid) {
		t.Errorf("the silent server %d is still running", pid)
	}
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	var pid int
	waitFor(t, func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// processGone reports whether pid has exited (a zombie waiting for a
// parent that does not reap counts as gone).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	// The state follows the command name in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
