package skill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

type fixture struct {
	base, ws, local, global, outside string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{base: base, ws: filepath.Join(base, "ws"), local: filepath.Join(base, "local"),
		global: filepath.Join(base, "global"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{f.ws, f.local, f.global, f.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func skillMD(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body
}

func (f *fixture) tool(t *testing.T, config string) *Tool {
	t.Helper()
	if config == "" {
		config = `{"localDirs": [` + jsonString(f.local) + `], "globalDirs": [` + jsonString(f.global) + `]}`
	}
	tl, err := New(tools.BuildContext{WorkDir: f.ws}, json.RawMessage(config))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.(*Tool).Close() })
	return tl.(*Tool)
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

func call(t *testing.T, tl *Tool, name string) (string, error) {
	t.Helper()
	res, err := tl.Call(context.Background(), json.RawMessage(`{"skill": `+jsonString(name)+`}`))
	return res.Text, err
}

func TestPrecedenceAndListing(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.global, "pdf", "SKILL.md"), skillMD("pdf", "Global PDF skill.", "global body\n"))
	write(t, filepath.Join(f.global, "docx", "SKILL.md"), "---\nname: docx\ndescription: Word files.\ndescription_zh: Word 文档。\n---\ndocx body\n")
	write(t, filepath.Join(f.local, "pdf", "SKILL.md"), skillMD("pdf", "Local PDF skill.", "local body\n"))
	write(t, filepath.Join(f.ws, "skills", "pdf", "SKILL.md"), skillMD("pdf", "Agent-written PDF skill.", "ws body\n"))
	write(t, filepath.Join(f.ws, "skills", "notes", "SKILL.md"), skillMD("notes", "Take notes.", "notes body\n"))
	write(t, filepath.Join(f.ws, "skills", "notes", "template.md"), "t")
	write(t, filepath.Join(f.ws, "skills", "notes", "scripts", "make.sh"), "s")
	tl := f.tool(t, "")

	want := "## Skills\n\nSkills are packaged instructions for particular kinds of task. Before you start a task that matches a skill's description, " +
		"call the `skill` tool with {\"skill\": \"<name>\"} to load its full instructions, then follow them.\n\n" +
		"Available skills:\n- docx: Word files.\n- notes: Take notes.\n- pdf: Local PDF skill.\n"
	if got := tl.SystemPrompt(context.Background()); got != want {
		t.Errorf("prompt:\n%s\nwant:\n%s", got, want)
	}
	got, err := call(t, tl, "pdf")
	if err != nil || !strings.Contains(got, "local body") {
		t.Errorf("pdf: %q, %v", got, err)
	}
	got, err = call(t, tl, "notes")
	wantNotes := "# Skill: notes\n\nDirectory: " + filepath.Join(f.ws, "skills", "notes") + " (in the workspace: skills/notes)\n" +
		"Files: scripts/make.sh, template.md\n\nnotes body\n"
	if err != nil || got != wantNotes {
		t.Errorf("notes:\n%s\nwant:\n%s(err %v)", got, wantNotes, err)
	}

	zh := f.tool(t, `{"globalDirs": [`+jsonString(f.global)+`], "useChinese": true, "disabledSkills": ["pdf"]}`)
	if p := zh.SystemPrompt(context.Background()); !strings.Contains(p, "- docx: Word 文档。\n- notes: Take notes.\n") || strings.Contains(p, "pdf") {
		t.Errorf("chinese prompt with pdf disabled:\n%s", p)
	}
	if _, err := call(t, zh, "pdf"); !errors.Is(err, tools.ErrNotFound) || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("disabled skill: %v", err)
	}
}

func TestNoSkillsNoPrompt(t *testing.T) {
	f := newFixture(t)
	tl := f.tool(t, `{"globalDirs": [`+jsonString(filepath.Join(f.base, "missing"))+`]}`)
	if p := tl.SystemPrompt(context.Background()); p != "" {
		t.Errorf("prompt %q", p)
	}
	if _, err := call(t, tl, "x"); !errors.Is(err, tools.ErrNotFound) || !strings.Contains(err.Error(), "No skills are available") {
		t.Errorf("err %v", err)
	}
}

// TestAgentWrittenSkillIsPickedUp writes through the workspace as the write
// tool does, and checks the cache: unchanged directories are not re-parsed.
func TestAgentWrittenSkillIsPickedUp(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.global, "g", "SKILL.md"), skillMD("g", "Global.", "g\n"))
	tl := f.tool(t, "")
	if _, err := call(t, tl, "mine"); !errors.Is(err, tools.ErrNotFound) || !strings.Contains(err.Error(), "Available skills: g.") {
		t.Fatalf("before writing: %v", err)
	}
	ws, err := workspace.Open(f.ws, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, err := ws.WriteFileAtomic("skills/mine/SKILL.md", []byte(skillMD("mine", "Mine.", "v1\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := call(t, tl, "mine"); err != nil || !strings.HasSuffix(got, "v1\n") {
		t.Fatalf("after writing: %q, %v", got, err)
	}
	parsed := tl.parses
	for range 3 {
		tl.SystemPrompt(context.Background())
	}
	if tl.parses != parsed {
		t.Fatalf("unchanged skills were parsed again: %d -> %d", parsed, tl.parses)
	}
	// Same size, new time: still noticed, and only the workspace directory
	// is parsed again.
	if _, err := ws.WriteFileAtomic("skills/mine/SKILL.md", []byte(skillMD("mine", "Mine.", "v2\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(f.ws, "skills", "mine", "SKILL.md"), later, later); err != nil {
		t.Fatal(err)
	}
	if got, err := call(t, tl, "mine"); err != nil || !strings.HasSuffix(got, "v2\n") {
		t.Fatalf("after rewriting: %q, %v", got, err)
	}
	if tl.parses != parsed+1 {
		t.Fatalf("parses %d -> %d, want one more", parsed, tl.parses)
	}
	if err := os.RemoveAll(filepath.Join(f.ws, "skills")); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, tl, "mine"); !errors.Is(err, tools.ErrNotFound) {
		t.Fatalf("after removing: %v", err)
	}
}

func TestMalformedSkillsAreNotedNotFatal(t *testing.T) {
	f := newFixture(t)
	skills := filepath.Join(f.ws, "skills")
	write(t, filepath.Join(skills, "good", "SKILL.md"), skillMD("good", "Good.", "ok\n"))
	write(t, filepath.Join(skills, "nodesc", "SKILL.md"), "---\nname: nodesc\n---\n")
	write(t, filepath.Join(skills, "big", "SKILL.md"), skillMD("big", "Big.", strings.Repeat("x", MaxFileSize)))
	write(t, filepath.Join(skills, "twin", "SKILL.md"), skillMD("good", "Same name.", "dup\n"))
	write(t, filepath.Join(skills, "plain", "README.md"), "not a skill")
	write(t, filepath.Join(skills, ".hidden", "SKILL.md"), skillMD("hidden", "Hidden.", ""))
	if err := os.MkdirAll(filepath.Join(skills, "isdir", "SKILL.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	tl := f.tool(t, `{}`)
	p := tl.SystemPrompt(context.Background())
	for _, want := range []string{"- good: Good.\n", "skills/nodesc/SKILL.md: front matter has no description",
		"skills/big/SKILL.md: SKILL.md is over the 256 KiB limit", "skills/twin/SKILL.md: name \"good\" is already used by skills/good/SKILL.md",
		"skills/isdir/SKILL.md: SKILL.md is not a regular file"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "hidden") || strings.Contains(p, "plain") {
		t.Errorf("prompt lists a non-skill:\n%s", p)
	}
	if got, err := call(t, tl, "good"); err != nil || !strings.HasSuffix(got, "ok\n") {
		t.Errorf("good: %q, %v", got, err)
	}
}

// TestNamesCannotReadOutside tries paths and symlinks as skill names and
// skill directories. Nothing outside the skill directories may be read.
func TestNamesCannotReadOutside(t *testing.T) {
	f := newFixture(t)
	secret := "TOP SECRET CONTENT"
	write(t, filepath.Join(f.outside, "SKILL.md"), skillMD("outside", "Outside. "+secret, secret))
	write(t, filepath.Join(f.outside, "evil", "SKILL.md"), skillMD("evil", "Evil. "+secret, secret))
	write(t, filepath.Join(f.ws, "secret.md"), skillMD("wsfile", "In the workspace. "+secret, secret))
	skills := filepath.Join(f.ws, "skills")
	write(t, filepath.Join(skills, "good", "SKILL.md"), skillMD("good", "Good.", "ok\n"))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(skills, "linkfile"), 0o755))
	must(os.Symlink(filepath.Join(f.outside, "SKILL.md"), filepath.Join(skills, "linkfile", "SKILL.md")))
	must(os.Symlink("../../secret.md", filepath.Join(skills, "good", "..", "relfile")))
	must(os.Symlink(filepath.Join(f.outside, "evil"), filepath.Join(skills, "linkdir")))
	must(os.MkdirAll(filepath.Join(skills, "hard"), 0o755))
	must(os.Link(filepath.Join(f.outside, "SKILL.md"), filepath.Join(skills, "hard", "SKILL.md")))
	tl := f.tool(t, `{}`)

	p := tl.SystemPrompt(context.Background())
	if strings.Contains(p, secret) {
		t.Fatalf("outside content in the prompt:\n%s", p)
	}
	for _, want := range []string{"skills/linkfile/SKILL.md: refused", "skills/linkdir/SKILL.md: refused", "skills/hard/SKILL.md: SKILL.md has several hard links"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	for _, name := range []string{"../outside", "../../outside/evil", f.outside, filepath.Join(f.outside, "evil"),
		"good/../../secret.md", "linkfile", "linkdir", "hard", "evil", "outside", "wsfile", "relfile", "", "GOOD", "good\x00"} {
		got, err := call(t, tl, name)
		if err == nil || strings.Contains(got, secret) || strings.Contains(err.Error(), secret) {
			t.Errorf("skill %q: %q, %v", name, got, err)
		}
		if !errors.Is(err, tools.ErrNotFound) && !errors.Is(err, tools.ErrInvalidArgs) {
			t.Errorf("skill %q: err %v is neither not found nor invalid", name, err)
		}
	}
}

func TestWorkspaceSkillsDirMayNotLeaveTheWorkspace(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.outside, "evil", "SKILL.md"), skillMD("evil", "Evil.", "secret"))
	if err := os.Symlink(f.outside, filepath.Join(f.ws, "skills")); err != nil {
		t.Fatal(err)
	}
	tl := f.tool(t, `{}`)
	if _, err := call(t, tl, "evil"); !errors.Is(err, tools.ErrNotFound) || !strings.Contains(err.Error(), "cannot be opened") {
		t.Fatalf("err %v", err)
	}
}

func TestLocalDirNamingTheWorkspaceSkillsIsConfined(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.ws, "skills", "a", "SKILL.md"), skillMD("a", "A.", "a\n"))
	tl := f.tool(t, `{"localDirs": [`+jsonString(filepath.Join(f.ws, "skills"))+`]}`)
	if len(tl.sources) != 1 || tl.sources[0].inWS != WorkspaceDir {
		t.Fatalf("sources %+v", tl.sources)
	}
	if got, err := call(t, tl, "a"); err != nil || !strings.Contains(got, "(in the workspace: skills/a)") {
		t.Fatalf("%q, %v", got, err)
	}
}

func TestConfigErrors(t *testing.T) {
	f := newFixture(t)
	file := filepath.Join(f.base, "file")
	write(t, file, "x")
	cases := []struct{ config, field string }{
		{`{"disabledSkills": ["Bad Name"]}`, "disabledSkills[0]"},
		{`{"globalDirs": [""]}`, "globalDirs[0]"},
		{`{"localDirs": ["/tmp", ` + jsonString(file) + `]}`, "localDirs[1]"},
		{`{"useChinese": "yes"}`, "useChinese"},
		{`{"globalDir": []}`, "globalDir"},
		{`{"workDir": ` + jsonString(file) + `}`, "workDir"},
	}
	for _, c := range cases {
		_, err := New(tools.BuildContext{WorkDir: f.ws}, json.RawMessage(c.config))
		var ce *tools.ConfigError
		if !errors.As(err, &ce) || ce.Path != c.field {
			t.Errorf("%s: err = %v, want a config error at %s", c.config, err, c.field)
		}
	}
	if d, ok := tools.Builtins.Lookup(Name); !ok || !json.Valid(d.ConfigSchema) || !json.Valid(d.ArgsSchema) {
		t.Fatal("skill is not registered with valid schemas")
	}
}

// TestConcurrentRuns is meant for -race: runs share one tool while the
// agent rewrites a skill.
func TestConcurrentRuns(t *testing.T) {
	f := newFixture(t)
	path := filepath.Join(f.ws, "skills", "s", "SKILL.md")
	write(t, path, skillMD("s", "S.", "v0\n"))
	tl := f.tool(t, "")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			// A reader may catch the file half-written: the skill is
			// then missing for that call, which is allowed.
			if err := os.WriteFile(path, []byte(skillMD("s", "S.", strings.Repeat("v", i+1)+"\n")), 0o644); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for range 50 {
				if _, err := call(t, tl, "s"); err != nil && !errors.Is(err, tools.ErrNotFound) {
					errs <- err
					return
				}
				tl.SystemPrompt(context.Background())
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	<-done
}

func TestFifoSkillIsRefusedWithoutBlocking(t *testing.T) {
	f := newFixture(t)
	p := filepath.Join(f.ws, "skills", "pipe", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	tl := f.tool(t, `{}`)
	done := make(chan string, 1)
	go func() { _, err := call(t, tl, "pipe"); done <- fmt.Sprint(err) }()
	select {
	case msg := <-done:
		if !strings.Contains(msg, "skills/pipe/SKILL.md: SKILL.md is not a regular file") {
			t.Fatalf("err %s", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the skill tool blocked on a FIFO")
	}
}
