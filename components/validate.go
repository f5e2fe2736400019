package components

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/tools"
	mcptool "github.com/ruleagent/ruleagent/tools/mcp"
)

// Problem is one finding of Validate, located by file and JSON path.
type Problem struct {
	File string `json:"file"`
	Path string `json:"path"`
	Msg  string `json:"message"`
	// Warning marks what RuleGo itself accepts (a node without an id, a
	// call to a chain not deployed yet): the chain loads and runs, but
	// something may not work as meant. Every other problem is an error:
	// the chain would not load, or would fail every run.
	Warning bool `json:"warning,omitempty"`
}

// Split separates errors from warnings, keeping their order.
func Split(problems []Problem) (errs, warnings []Problem) {
	for _, p := range problems {
		if p.Warning {
			warnings = append(warnings, p)
		} else {
			errs = append(errs, p)
		}
	}
	return errs, warnings
}

func (p Problem) Error() string {
	switch {
	case p.Path == "":
		return p.File + ": " + p.Msg
	case p.File == "":
		return p.Path + ": " + p.Msg
	}
	return p.File + ": " + p.Path + ": " + p.Msg
}

// ChainFile is a chain definition to check.
type ChainFile struct {
	Path string
	DSL  []byte
}

// chainDef is the part of the DSL the checks read.
type chainDef struct {
	RuleChain types.RuleChainBaseInfo `json:"ruleChain"`
	Metadata  struct {
		FirstNodeIndex int `json:"firstNodeIndex"`
		Nodes          []struct {
			ID            string         `json:"id"`
			Type          string         `json:"type"`
			Configuration map[string]any `json:"configuration"`
		} `json:"nodes"`
		Connections []struct {
			FromID string `json:"fromId"`
			ToID   string `json:"toId"`
			Type   string `json:"type"`
		} `json:"connections"`
	} `json:"metadata"`
}

// edge is a call from one chain to another: a rulechain or agent tool, or
// a flow node.
type edge struct {
	from, to string
	file     string
	path     string
}

// Options are what decides about a chain beyond its own DSL, as the host
// that would load it sees it. ruleagent validate, run and serve give the
// same options for the same flags and environment, so that the three
// decide alike.
type Options struct {
	// Known reports other deployed chain ids (may be nil).
	Known func(id string) bool
	// Globals are the ${global.x} values the chains load with.
	Globals map[string]string
	// Sandbox is the host's sandbox floor (see Governance).
	Sandbox SandboxFloor
}

// Validate checks chain files without running them, as loading them
// would: the DSL structure and its keys (a key RuleGo ignores or reads in
// another case is a warning naming the key meant), component types, the
// configuration of ai/agent and ai/intent nodes as their Init reads it
// (${global.x} and ${vars.x} filled in as RuleGo fills them, each builtin
// tool built as the agent builds it, MCP entries checked without
// connecting, the sandbox floor), that every targetId names a chain (among
// files, context and o.Known), and that chains do not call each other in
// a cycle. context files are read for their ids and calls only.
func Validate(files, context []ChainFile, o Options) []Problem {
	var problems []Problem
	ids := map[string]string{} // chain id -> file
	var edges []edge
	lint := &keyLint{}
	for _, f := range files {
		def, ps := checkFile(f, o, lint)
		problems = append(problems, ps...)
		if def == nil {
			continue
		}
		id := idOf(f, def)
		if prev, dup := ids[id]; dup {
			problems = append(problems, Problem{File: f.Path, Path: "ruleChain.id", Msg: fmt.Sprintf("chain id %q is also used by %s", id, prev)})
		}
		ids[id] = f.Path
		edges = append(edges, callsOf(f.Path, id, def)...)
	}
	for _, f := range context {
		// A context file only gives its id and its calls, parsed once and
		// not checked: checking each whole would make loading n chains
		// cost n² checks.
		var def chainDef
		if json.Unmarshal(f.DSL, &def) != nil {
			continue
		}
		id := idOf(f, &def)
		if _, seen := ids[id]; seen {
			continue
		}
		ids[id] = f.Path
		edges = append(edges, callsOf(f.Path, id, &def)...)
	}
	reported := map[string]bool{}
	for _, f := range files {
		reported[f.Path] = true
	}
	for _, e := range edges {
		if !reported[e.file] {
			continue
		}
		if _, ok := ids[e.to]; !ok && (o.Known == nil || !o.Known(e.to)) {
			// RuleGo resolves calls when they run: the chain loads, and the
			// call fails until the target is deployed.
			problems = append(problems, Problem{File: e.file, Path: e.path, Warning: true,
				Msg: fmt.Sprintf("no chain %q among the files given or in the chains folder: calls to it fail until it is deployed", e.to)})
		}
	}
	return append(problems, cycles(edges, reported)...)
}

// idOf is a chain's id: its ruleChain.id, else its file name.
func idOf(f ChainFile, def *chainDef) string {
	if def.RuleChain.ID != "" {
		return def.RuleChain.ID
	}
	return fileID(f.Path)
}

func fileID(path string) string {
	base := path[strings.LastIndex(path, "/")+1:]
	return strings.TrimSuffix(base, ".json")
}

// checkFile checks one file's structure, keys, components and the
// configuration of ruleagent's nodes.
func checkFile(f ChainFile, o Options, lint *keyLint) (*chainDef, []Problem) {
	var ps []Problem
	add := func(path, format string, args ...any) {
		ps = append(ps, Problem{File: f.Path, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	var doc map[string]any
	if err := json.Unmarshal(f.DSL, &doc); err != nil {
		for _, p := range problemsOf(configerr.FromJSON(err, f.DSL, &doc)) {
			add(p.Path, "%s", strings.Replace(p.Msg, "is not an object", "is not a chain (a JSON object)", 1))
		}
		return nil, ps
	}
	lint.file, lint.out = f.Path, nil
	lint.chain(doc)
	ps = append(ps, lint.out...)
	if _, ok := member(doc, "ruleChain").(map[string]any); !ok {
		add("ruleChain", "missing: a chain is {\"ruleChain\": {\"id\": ...}, \"metadata\": {\"nodes\": [...], \"connections\": [...]}}")
		return nil, ps
	}
	var def chainDef
	if err := json.Unmarshal(f.DSL, &def); err != nil {
		for _, p := range problemsOf(configerr.FromJSON(err, f.DSL, &def)) {
			add(p.Path, "%s", p.Msg)
		}
		return nil, ps
	}
	nodes := def.Metadata.Nodes
	if len(nodes) == 0 {
		add("metadata.nodes", "the chain has no nodes")
	}
	if n := def.Metadata.FirstNodeIndex; n < 0 || (len(nodes) > 0 && n >= len(nodes)) {
		add("metadata.firstNodeIndex", "%d is not the index of a node (0..%d)", n, len(nodes)-1)
	}
	registered := rulego.Registry.GetComponents()
	env := placeholderEnv(o.Globals, &def)
	seen := map[string]bool{}
	for i := range nodes {
		n := &nodes[i]
		p := fmt.Sprintf("metadata.nodes[%d]", i)
		switch {
		case n.ID == "":
			// RuleGo names such a node after its index.
			n.ID = fmt.Sprintf("node%d", i)
			ps = append(ps, Problem{File: f.Path, Path: p + ".id", Warning: true,
				Msg: fmt.Sprintf("missing: RuleGo names the node %q", n.ID)})
		case seen[n.ID]:
			add(p+".id", "duplicate node id %q", n.ID)
		}
		seen[n.ID] = true
		if _, ok := registered[n.Type]; !ok {
			add(p+".type", "unknown component type %q%s", n.Type, typeHint(n.Type, registered))
			continue
		}
		var nps []Problem
		switch n.Type {
		case AgentType:
			nps = checkAgentConfig(n.ID, fill(n.Configuration, env), o)
		case IntentType:
			nps = checkIntentConfig(fill(n.Configuration, env))
		}
		for _, pr := range nps {
			add(configerr.Join(p+".configuration", pr.Path), "%s", pr.Msg)
		}
	}
	for i, c := range def.Metadata.Connections {
		p := fmt.Sprintf("metadata.connections[%d]", i)
		if !seen[c.FromID] {
			add(p+".fromId", "no node %q", c.FromID)
		}
		if !seen[c.ToID] {
			add(p+".toId", "no node %q", c.ToID)
		}
		if c.Type == "" {
			add(p+".type", "missing relation type")
		}
	}
	return &def, ps
}

// typeHint names the registered type an unknown one misspells.
func typeHint(typ string, registered map[string]types.Node) string {
	if s := configerr.Suggest(typ, slices.Collect(maps.Keys(registered))); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// checkAgentConfig checks an ai/agent node's configuration the way Init
// does: the same reading, the same checks (the sandbox floor included),
// each builtin tool built by its own factory and closed. It creates
// nothing (workspaces appear at first use), starts no MCP server and
// dials nothing: MCP entries are checked without connecting.
func checkAgentConfig(node string, cfg map[string]any, o Options) []Problem {
	c, err := readConfig(cfg)
	if err != nil {
		return problemsOf(err)
	}
	p, err := c.parse()
	if err != nil {
		return problemsOf(err)
	}
	var ps []Problem
	if err := o.Sandbox.check(node, p.specs); err != nil {
		ps = append(ps, problemsOf(err)...)
	}
	for i, s := range p.specs {
		path := fmt.Sprintf("tools[%d]", i)
		switch s.Type {
		case tools.TypeMCP:
			if err := mcptool.CheckSpec(s); err != nil {
				ps = append(ps, problemsOf(configerr.Prefix(path, err))...)
			}
		case tools.TypeBuiltin:
			def, ok := tools.Builtins.Lookup(s.Name)
			if !ok {
				ps = append(ps, Problem{Path: path + ".name", Msg: fmt.Sprintf("unknown builtin %q (available: %s)%s", s.Name,
					strings.Join(tools.Builtins.Names(), ", "), suggestion(s.Name, tools.Builtins.Names()))})
				continue
			}
			t, err := def.New(tools.BuildContext{WorkDir: c.Workspace}, s.Config)
			if err != nil {
				ps = append(ps, problemsOf(configerr.Prefix(path+".config", err))...)
				continue
			}
			if cl, ok := t.(io.Closer); ok {
				_ = cl.Close()
			}
		}
	}
	return ps
}

func suggestion(name string, known []string) string {
	if s := configerr.Suggest(name, known); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

// problemsOf lists the configuration errors err holds, each at its path;
// an error that is not one is a problem of the whole object.
func problemsOf(err error) []Problem {
	all := configerr.All(err)
	if len(all) == 0 {
		return []Problem{{Msg: err.Error()}}
	}
	out := make([]Problem, len(all))
	for i, e := range all {
		out[i] = Problem{Path: e.Path, Msg: e.Msg}
	}
	return out
}
