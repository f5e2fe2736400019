// Package skill is the built-in `skill` tool: the agent's library of
// packaged expertise. A skill is a directory holding a SKILL.md, Markdown
// with a YAML front matter that gives its name and description. The tool
// lists the available skills in the system prompt, and returns a skill's
// full instructions when the model calls it with the skill's name.
//
// Skills come from local directories first, then global ones; a local
// skill shadows a global one of the same name. The workspace's skills/
// directory is always a local directory, so a skill the agent writes there
// with the write tool is available on its next call. Every directory is
// re-checked on each use by a cheap fingerprint and re-parsed only when a
// SKILL.md in it changed.
package skill

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/textfile"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

// Name is the builtin name.
const Name = "skill"

// WorkspaceDir is the workspace sub-directory that is always a local skill
// directory.
const WorkspaceDir = "skills"

// Config configures a skill tool.
type Config struct {
	WorkDir        string   `json:"workDir,omitempty" jsonschema:"Workspace whose skills/ directory is always searched, after localDirs: skills the agent writes there are picked up on its next call. Empty means the agent's workspace directory."`
	LocalDirs      []string `json:"localDirs,omitempty" jsonschema:"Directories of skills for this agent, searched in order before globalDirs; a local skill shadows a global one of the same name. Relative paths are taken from the process's working directory."`
	GlobalDirs     []string `json:"globalDirs,omitempty" jsonschema:"Directories of skills shared by all agents, searched in order after the local ones."`
	UseChinese     bool     `json:"useChinese,omitempty" jsonschema:"List skills with their Chinese description (description_zh) when they have one."`
	DisabledSkills []string `json:"disabledSkills,omitempty" jsonschema:"Names of skills to leave out wherever they are found."`
}

// Args are the call arguments.
type Args struct {
	Skill string `json:"skill" jsonschema:"The name of the skill to load, as listed under Skills in the system prompt."`
}

const description = "Load a skill: the full instructions for a kind of task, as listed under Skills in the system prompt. " +
	"Call it before starting a task that matches a skill's description, then follow the instructions it returns."

var argsSchema = tools.ArgsSchema[Args](nil)

func init() {
	tools.MustRegister(tools.Definition{
		Name:         Name,
		Description:  "Load packaged instructions (SKILL.md) by name; lists the available skills in the system prompt.",
		ConfigSchema: tools.SchemaFor(Config{}),
		ArgsSchema:   argsSchema,
		New:          New,
	})
}

// Tool is a skill tool. It is safe for concurrent use by many runs.
type Tool struct {
	ws         *workspace.Workspace
	sources    []*source // local first, then global
	useChinese bool
	disabled   map[string]bool

	mu     sync.Mutex // guards the sources' caches, cat and parses
	cat    *catalog
	parses int // SKILL.md files parsed, for tests of the cache
}

// catalog is an immutable view of the skills available at one moment.
type catalog struct {
	skills []*Skill // by name
	byName map[string]*Skill
	notes  []string
}

// New is the factory: it validates the config and opens the workspace.
func New(bc tools.BuildContext, config json.RawMessage) (tools.Tool, error) {
	var cfg Config
	if err := tools.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	t := &Tool{useChinese: cfg.UseChinese, disabled: map[string]bool{}}
	for i, n := range cfg.DisabledSkills {
		if !NamePattern.MatchString(n) {
			return nil, &tools.ConfigError{Path: fmt.Sprintf("disabledSkills[%d]", i), Msg: fmt.Sprintf("%q is not a skill name (%s)", n, NamePattern)}
		}
		t.disabled[n] = true
	}
	local, err := checkDirs("localDirs", cfg.LocalDirs)
	if err != nil {
		return nil, err
	}
	global, err := checkDirs("globalDirs", cfg.GlobalDirs)
	if err != nil {
		return nil, err
	}
	dir := cfg.WorkDir
	if dir == "" {
		dir = bc.WorkDir
	}
	if t.ws, err = workspace.Open(dir, workspace.Options{}); err != nil {
		return nil, &tools.ConfigError{Path: "workDir", Msg: err.Error(), Err: err}
	}
	wsSkills := filepath.Join(t.ws.Dir(), WorkspaceDir)
	inWS := false
	add := func(d string) {
		if sameDir(d, wsSkills) {
			if !inWS {
				inWS = true
				t.sources = append(t.sources, t.workspaceSource(wsSkills))
			}
			return
		}
		for _, s := range t.sources {
			if sameDir(s.dir, d) {
				return
			}
		}
		t.sources = append(t.sources, &source{dir: d, open: func() (*os.Root, error) { return os.OpenRoot(d) }})
	}
	for _, d := range local {
		add(d)
	}
	add(wsSkills)
	for _, d := range global {
		add(d)
	}
	return t, nil
}

// workspaceSource opens skills/ through the workspace's root, so that the
// directory the agent can write to cannot be a symlink out of it either.
func (t *Tool) workspaceSource(dir string) *source {
	return &source{dir: dir, inWS: WorkspaceDir, open: func() (*os.Root, error) {
		root, err := t.ws.Root()
		if err != nil {
			return nil, err
		}
		return root.OpenRoot(WorkspaceDir)
	}}
}

// checkDirs makes configured directories absolute. A directory that does
// not exist yet is accepted (it may be created later); a path that names
// something else is a mistake.
func checkDirs(field string, dirs []string) ([]string, error) {
	out := make([]string, 0, len(dirs))
	for i, d := range dirs {
		at := fmt.Sprintf("%s[%d]", field, i)
		if strings.TrimSpace(d) == "" {
			return nil, &tools.ConfigError{Path: at, Msg: "empty path"}
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, &tools.ConfigError{Path: at, Msg: err.Error(), Err: err}
		}
		if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
			return nil, &tools.ConfigError{Path: at, Msg: fmt.Sprintf("%s is not a directory", abs)}
		}
		out = append(out, abs)
	}
	return out, nil
}

// sameDir compares two absolute directories, through symlinks when they
// exist.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// Info implements tools.Tool.
func (t *Tool) Info() tools.Info {
	return tools.Info{Name: Name, Description: description, Parameters: argsSchema}
}

// Close releases the workspace.
func (t *Tool) Close() error { return t.ws.Close() }

// load refreshes every directory and returns the current catalog.
func (t *Tool) load() *catalog {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := false
	for _, s := range t.sources {
		if s.refresh(&t.parses) {
			changed = true
		}
	}
	if changed || t.cat == nil {
		t.cat = t.build()
	}
	return t.cat
}

// build merges the directories: the first skill of a name wins.
func (t *Tool) build() *catalog {
	c := &catalog{byName: map[string]*Skill{}}
	for _, s := range t.sources {
		c.notes = append(c.notes, s.notes...)
		for _, sk := range s.skills {
			if _, shadowed := c.byName[sk.Name]; shadowed || t.disabled[sk.Name] {
				continue
			}
			c.byName[sk.Name] = sk
			c.skills = append(c.skills, sk)
		}
	}
	slices.SortFunc(c.skills, func(a, b *Skill) int { return strings.Compare(a.Name, b.Name) })
	return c
}

// Call implements tools.Tool.
func (t *Tool) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var a Args
	if err := tools.DecodeArgs(raw, &a); err != nil {
		return tools.Result{}, err
	}
	c := t.load()
	name := strings.TrimSpace(a.Skill)
	sk := c.byName[name]
	if sk == nil {
		kind, what := tools.ErrNotFound, "there is no skill named "+quote(name)
		switch {
		case name == "":
			kind, what = tools.ErrInvalidArgs, "skill (the name of the skill to load) is required"
		case !NamePattern.MatchString(name):
			kind, what = tools.ErrInvalidArgs, quote(name)+" is not a skill name: give a name from the list, not a path"
		case t.disabled[name]:
			what = "the skill " + quote(name) + " is disabled"
		}
		return tools.Result{}, tools.Errorf(kind, "%s. %s", what, c.availability())
	}
	return tools.TextResult(t.render(sk)), nil
}

// render is what the model reads when it loads a skill.
func (t *Tool) render(sk *Skill) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Skill: %s\n\n", sk.Name)
	fmt.Fprintf(&b, "Directory: %s", sk.Dir)
	if sk.InWorkspace != "" {
		fmt.Fprintf(&b, " (in the workspace: %s)", sk.InWorkspace)
	}
	b.WriteString("\n")
	if len(sk.AllowedTools) > 0 {
		fmt.Fprintf(&b, "Allowed tools: %s\n", strings.Join(sk.AllowedTools, ", "))
	}
	if files, more := sk.src.companions(sk.dirName); len(files) > 0 {
		fmt.Fprintf(&b, "Files: %s", strings.Join(files, ", "))
		if more > 0 {
			fmt.Fprintf(&b, " and %d more", more)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	b.WriteString(sk.Body)
	if !strings.HasSuffix(sk.Body, "\n") {
		b.WriteString("\n")
	}
	return b.String()
}

// availability lists the skill names, and the skills that failed to load,
// for error messages.
func (c *catalog) availability() string {
	names := make([]string, len(c.skills))
	for i, sk := range c.skills {
		names[i] = sk.Name
	}
	s := "No skills are available."
	if len(names) > 0 {
		s = "Available skills: " + strings.Join(names, ", ") + "."
	}
	if len(c.notes) > 0 {
		s += " Not loadable: " + strings.Join(c.notes, "; ") + "."
	}
	return s
}

// SystemPrompt implements tools.PromptContributor: the list of skills and
// how to use them, or nothing when there are none.
func (t *Tool) SystemPrompt(ctx context.Context) string {
	c := t.load()
	if len(c.skills) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Skills\n\n")
	b.WriteString("Skills are packaged instructions for particular kinds of task. Before you start a task that matches a skill's description, ")
	fmt.Fprintf(&b, "call the `%s` tool with {\"skill\": \"<name>\"} to load its full instructions, then follow them.\n\n", Name)
	b.WriteString("Available skills:\n")
	for _, sk := range c.skills {
		desc := sk.Description
		if t.useChinese && sk.DescriptionZh != "" {
			desc = sk.DescriptionZh
		}
		fmt.Fprintf(&b, "- %s: %s\n", sk.Name, desc)
	}
	if len(c.notes) > 0 {
		fmt.Fprintf(&b, "\nSkills that could not be loaded: %s.\n", strings.Join(c.notes, "; "))
	}
	return b.String()
}

func quote(s string) string {
	if len(s) > 80 {
		s = textfile.Cut(s, 80) + "…"
	}
	return fmt.Sprintf("%q", s)
}

var _ tools.PromptContributor = (*Tool)(nil)
