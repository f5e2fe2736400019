package policy

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

// Tool kinds: the `type` of the tools-array entry a tool came from.
const (
	KindBuiltin   = "builtin"
	KindRuleChain = "rulechain"
	KindAgent     = "agent"
	KindMCP       = "mcp"
)

// Tool is what a policy knows of a tool.
type Tool struct {
	// Name is the name the model sees.
	Name string
	// Kind is builtin, rulechain, agent or mcp.
	Kind string
	// Server is an MCP tool's server: the prefix of its name (the part
	// before the first "__").
	Server string
}

// builtinGroups lists the builtins of each builtin group. A group matches a
// builtin by its kind and name together: a rule chain or an MCP tool that
// happens to be named "bash" is not in group:runtime.
var builtinGroups = map[string][]string{
	"group:fs":      {"read", "write", "edit", "glob", "grep", "skill"},
	"group:runtime": {"bash"},
	"group:web":     {"web_fetch", "web_search"},
}

// kindGroups match every tool of a kind.
var kindGroups = map[string]string{
	"group:mcp":    KindMCP,
	"group:agents": KindAgent,
	"group:chains": KindRuleChain,
}

const mcpServerGroup = "group:mcp:"

// BuiltinGroupMembers returns the builtins of each builtin group, for
// documentation and for the check that they are all registered.
func BuiltinGroupMembers() map[string][]string {
	out := make(map[string][]string, len(builtinGroups))
	for g, m := range builtinGroups {
		out[g] = slices.Clone(m)
	}
	return out
}

// GroupNames lists the fixed groups (group:mcp:<server> besides), sorted.
func GroupNames() []string {
	names := slices.Collect(maps.Keys(builtinGroups))
	for g := range kindGroups {
		names = append(names, g)
	}
	slices.Sort(names)
	return names
}

// profile is a named starting set of tools.
type profile struct {
	name    string
	all     bool
	entries []entry
}

func (p *profile) matches(t Tool) bool {
	if p.all {
		return true
	}
	for i := range p.entries {
		if p.entries[i].matches(t) {
			return true
		}
	}
	return false
}

// profiles are the named starting sets. minimal holds nothing: the tools an
// agent needs are added with alsoAllow.
var profiles = func() map[string]*profile {
	def := map[string][]string{
		"coding":   {"group:fs", "group:runtime", "group:web"},
		"readonly": {"read", "glob", "grep", "skill"},
		"minimal":  {},
	}
	out := map[string]*profile{"full": {name: "full", all: true}}
	for name, list := range def {
		p := &profile{name: name}
		for _, s := range list {
			e, err := compileEntry(s, false)
			if err != nil {
				panic(fmt.Sprintf("policy: profile %s: %v", name, err))
			}
			// A profile's plain names are builtins: "read" in readonly is
			// the read builtin, not a rule chain someone named read.
			if e.group == nil {
				e.group = builtinNamed(s)
			}
			p.entries = append(p.entries, e)
		}
		out[name] = p
	}
	return out
}()

// ProfileNames lists the profiles, sorted.
func ProfileNames() []string { return slices.Sorted(maps.Keys(profiles)) }

// ProfileMembers returns what each profile is made of, for documentation.
func ProfileMembers(name string) (members []string, all bool, ok bool) {
	p, ok := profiles[name]
	if !ok {
		return nil, false, false
	}
	for _, e := range p.entries {
		members = append(members, e.raw)
	}
	return members, p.all, true
}

func builtinNamed(name string) func(Tool) bool {
	return func(t Tool) bool { return t.Kind == KindBuiltin && t.Name == name }
}

// entry is one compiled item of a list: a group, an exact name, or a glob.
type entry struct {
	raw   string
	group func(Tool) bool
	// name is the exact name or the glob; deny entries hold it lower-cased
	// and compare lower-cased names, so that a case slip in a deny list
	// refuses more, never less.
	name string
	glob bool
	fold bool
}

func (e *entry) matches(t Tool) bool {
	if e.group != nil {
		return e.group(t)
	}
	switch {
	case !e.glob && e.fold:
		return strings.EqualFold(e.name, t.Name)
	case !e.glob:
		return e.name == t.Name
	case e.fold:
		ok, _ := path.Match(e.name, strings.ToLower(t.Name))
		return ok
	}
	ok, _ := path.Match(e.name, t.Name)
	return ok
}

var errEmptyEntry = errors.New("empty entry")

// compileEntry reads one list item. Tool names the model sees are made of
// letters, digits, "_" and "-"; an entry may add the glob characters
// "*", "?" and "[...]". Anything else (spaces, dots, slashes, a colon
// outside a group) is refused rather than left to match nothing.
func compileEntry(s string, deny bool) (entry, error) {
	if s == "" {
		return entry{}, errEmptyEntry
	}
	if strings.HasPrefix(s, "group:") {
		g, err := groupMatcher(s)
		if err != nil {
			return entry{}, err
		}
		return entry{raw: s, group: g}, nil
	}
	for _, r := range s {
		if !nameRune(r) && !strings.ContainsRune("*?[]^", r) {
			return entry{}, fmt.Errorf("%q is not a tool name, a glob over tool names, or a group (group:%s, group:mcp:<server>)", s,
				strings.Join(trimGroups(GroupNames()), ", group:"))
		}
	}
	if _, err := path.Match(s, ""); err != nil {
		return entry{}, fmt.Errorf("%q is not a valid glob: %w", s, err)
	}
	e := entry{raw: s, name: s, glob: strings.ContainsAny(s, "*?["), fold: deny}
	if deny {
		e.name = strings.ToLower(s)
	}
	return e, nil
}

func trimGroups(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.TrimPrefix(n, "group:")
	}
	return out
}

func nameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// groupMatcher compiles a group entry; an unknown group is an error.
func groupMatcher(s string) (func(Tool) bool, error) {
	if members, ok := builtinGroups[s]; ok {
		return func(t Tool) bool { return t.Kind == KindBuiltin && slices.Contains(members, t.Name) }, nil
	}
	if kind, ok := kindGroups[s]; ok {
		return func(t Tool) bool { return t.Kind == kind }, nil
	}
	if server, ok := strings.CutPrefix(s, mcpServerGroup); ok {
		if err := checkServer(server); err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		return func(t Tool) bool { return t.Kind == KindMCP && t.Server == server }, nil
	}
	return nil, fmt.Errorf("unknown group %q (groups: %s, group:mcp:<server>)", s, strings.Join(GroupNames(), ", "))
}

// checkServer accepts what an MCP entry's prefix can be: letters, digits,
// "_" and "-", never "__" nor a trailing "_" (see the mcp tool's naming).
func checkServer(server string) error {
	switch {
	case server == "":
		return errors.New("the server's name is missing (group:mcp:<server>, the prefix of its tools' names)")
	case strings.Contains(server, "__") || strings.HasSuffix(server, "_"):
		return errors.New(`an MCP server's prefix never contains "__" nor ends with "_"`)
	}
	for _, r := range server {
		if !nameRune(r) {
			return fmt.Errorf("the server's name may hold only letters, digits, _ and -, not %q", r)
		}
	}
	return nil
}

// ServerOf returns the server of an MCP tool from the name the model sees:
// the part before the first "__", which the mcp tool type reserves as the
// separator.
func ServerOf(name string) string {
	if i := strings.Index(name, "__"); i > 0 {
		return name[:i]
	}
	return ""
}
