package components

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
	rgreflect "github.com/rulego/rulego/utils/reflect"

	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/tools"
	mcptool "github.com/ruleagent/ruleagent/tools/mcp"
)

// RuleGo decodes chain DSL with encoding/json and node configurations with
// mapstructure: both ignore keys they do not know and match the others
// regardless of case. A misspelt key (nmae, conections) is silently
// dropped, and targetID is read as targetId. Since RuleGo runs such a
// chain, these are warnings: each names the key the author most likely
// meant. ruleagent's own node types (ai/agent, ai/intent) refuse unknown
// keys, as errors, when they load.

var (
	chainKeys      = configerr.FieldNames(reflect.TypeFor[types.RuleChain]())
	ruleChainKeys  = configerr.FieldNames(reflect.TypeFor[types.RuleChainBaseInfo]())
	metadataKeys   = configerr.FieldNames(reflect.TypeFor[types.RuleMetadata]())
	nodeKeys       = configerr.FieldNames(reflect.TypeFor[types.RuleNode]())
	connectionKeys = configerr.FieldNames(reflect.TypeFor[types.NodeConnection]())
	specKeys       = configerr.FieldNames(reflect.TypeFor[tools.Spec]())
)

// keyLint reports the keys of chain DSL that RuleGo (or a parser of ours
// that matches keys regardless of case) does not read as written.
type keyLint struct {
	file  string
	out   []Problem
	forms map[string][]string // node type -> configuration keys, lazily
}

func (l *keyLint) warn(path, msg string) {
	l.out = append(l.out, Problem{File: l.file, Path: path, Msg: msg, Warning: true})
}

// object checks the keys of obj, at path, against known. A key that is
// known in another case is read as that key; any other is ignored.
func (l *keyLint) object(path string, obj map[string]any, known []string, ignoredBy string) {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if slices.Contains(known, k) {
			continue
		}
		s := configerr.Suggest(k, known)
		switch {
		case s != "" && strings.EqualFold(s, k):
			l.warn(configerr.Join(path, k), fmt.Sprintf("read as %q (%s matches keys regardless of case); write %q", s, ignoredBy, s))
		case s != "":
			l.warn(configerr.Join(path, k), fmt.Sprintf("unknown key, ignored by %s (did you mean %q?)", ignoredBy, s))
		case configerr.Suggest(k, []string{"description"}) != "" && slices.Contains(known, "additionalInfo"):
			l.warn(configerr.Join(path, k), fmt.Sprintf("unknown key, ignored by %s (a description goes in %s)", ignoredBy, configerr.Join(path, "additionalInfo.description")))
		default:
			l.warn(configerr.Join(path, k), fmt.Sprintf("unknown key, ignored by %s (keys: %s)", ignoredBy, strings.Join(known, ", ")))
		}
	}
}

// chain checks the keys of a whole chain document.
func (l *keyLint) chain(doc map[string]any) {
	l.object("", doc, chainKeys, "RuleGo")
	if rc, ok := member(doc, "ruleChain").(map[string]any); ok {
		l.object("ruleChain", rc, ruleChainKeys, "RuleGo")
		if info, ok := member(rc, "additionalInfo").(map[string]any); ok {
			l.nearMisses("ruleChain.additionalInfo", info, infoKeys)
		}
	}
	md, ok := member(doc, "metadata").(map[string]any)
	if !ok {
		return
	}
	l.object("metadata", md, metadataKeys, "RuleGo")
	nodes, _ := member(md, "nodes").([]any)
	for i, n := range nodes {
		node, ok := n.(map[string]any)
		if !ok {
			continue
		}
		p := fmt.Sprintf("metadata.nodes[%d]", i)
		l.object(p, node, nodeKeys, "RuleGo")
		typ, _ := member(node, "type").(string)
		cfg, _ := member(node, "configuration").(map[string]any)
		l.configuration(p+".configuration", typ, cfg)
	}
	conns, _ := member(md, "connections").([]any)
	for i, c := range conns {
		if conn, ok := c.(map[string]any); ok {
			l.object(fmt.Sprintf("metadata.connections[%d]", i), conn, connectionKeys, "RuleGo")
		}
	}
}

// infoKeys are the keys of ruleChain.additionalInfo ruleagent reads (the
// chains API and the MCP server); editors keep others there (layout).
var infoKeys = []string{"description", "mcp", "inputSchema"}

// nearMisses warns of keys of a free-form object that misspell one that is
// read; other keys are the object's to hold.
func (l *keyLint) nearMisses(path string, obj map[string]any, read []string) {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if s := configerr.Suggest(k, read); s != "" && s != k {
			l.warn(configerr.Join(path, k), fmt.Sprintf("not read (did you mean %q?)", s))
		}
	}
}

// configuration checks a node's configuration keys. ai/agent and ai/intent
// report unknown keys as errors themselves; for them only the tools array
// is checked here, whose parsers match keys regardless of case.
func (l *keyLint) configuration(path, typ string, cfg map[string]any) {
	switch typ {
	case AgentType:
		list, _ := cfg["tools"].([]any)
		for i, item := range list {
			l.toolEntry(fmt.Sprintf("%s.tools[%d]", path, i), item)
		}
		return
	case IntentType:
		return
	}
	known, ok := l.formKeys(typ)
	if !ok || len(known) == 0 {
		return
	}
	own := make(map[string]any, len(cfg))
	for k, v := range cfg {
		if !ruleGoKey(k) {
			own[k] = v
		}
	}
	l.object(path, own, known, "the "+typ+" component")
}

// toolEntry checks the keys of one tools entry and of its config.
func (l *keyLint) toolEntry(path string, item any) {
	entry, ok := item.(map[string]any)
	if !ok {
		return
	}
	caseOnly(l, path, entry, specKeys)
	typ, _ := member(entry, "type").(string)
	cfg, ok := member(entry, "config").(map[string]any)
	if !ok {
		return
	}
	var schema json.RawMessage
	switch typ {
	case tools.TypeBuiltin:
		name, _ := member(entry, "name").(string)
		if def, ok := tools.Builtins.Lookup(name); ok {
			schema = def.ConfigSchema
		}
	case tools.TypeMCP:
		schema = mcptool.ConfigSchema()
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) == nil && len(s.Properties) > 0 {
		caseOnly(l, path+".config", cfg, slices.Sorted(maps.Keys(s.Properties)))
	}
}

// caseOnly warns of keys our strict parsers read as another key because
// encoding/json matches names regardless of case; keys they do not know at
// all are their errors.
func caseOnly(l *keyLint, path string, obj map[string]any, known []string) {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if slices.Contains(known, k) {
			continue
		}
		for _, want := range known {
			if strings.EqualFold(want, k) {
				l.warn(configerr.Join(path, k), fmt.Sprintf("read as %q (keys are matched regardless of case); write %q", want, want))
			}
		}
	}
}

// formKeys are the configuration keys a RuleGo component reads: the fields
// of its Config struct, as its form in the editor lists them.
func (l *keyLint) formKeys(typ string) ([]string, bool) {
	if k, ok := l.forms[typ]; ok {
		return k, true
	}
	n, err := rulego.Registry.NewNode(typ)
	if err != nil {
		return nil, false
	}
	_, field, value := rgreflect.GetComponentConfig(n)
	if field.Type == nil || field.Type.Kind() != reflect.Struct {
		return nil, false
	}
	var names []string
	for _, f := range rgreflect.GetFields(field, value) {
		names = append(names, f.Name)
	}
	if l.forms == nil {
		l.forms = map[string][]string{}
	}
	l.forms[typ] = names
	return names, true
}

// member reads obj's key as RuleGo's decoder would: the exact key, else
// one that differs only in case.
func member(obj map[string]any, key string) any {
	if v, ok := obj[key]; ok {
		return v
	}
	for k, v := range obj {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}
