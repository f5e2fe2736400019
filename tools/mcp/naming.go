package mcptool

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/ruleagent/ruleagent/tools"
)

// The name the model sees for an MCP tool is <prefix>__<tool>.
//
// The mapping is injective: two different (prefix, tool) pairs never give the
// same name, short of a 32-bit hash collision, which the tools core still
// catches as a duplicate name.
//   - A prefix never contains "__" and never ends with "_", so the first "__"
//     of a name is always the separator and the prefix can be read back.
//   - A tool name made only of [a-zA-Z0-9_-] that fits is kept as it is.
//   - Any other name has each other character replaced by "_" and a hash of
//     the original name appended ("_" and 8 hex digits): names that differ
//     only in the replaced characters ("a.b", "a/b") stay apart.
//   - A name too long for the 64 characters OpenAI allows is cut, and the
//     hash of the original name appended likewise.
const (
	separator = "__"
	// maxNameLen is the length limit of tools.NamePattern (OpenAI's).
	maxNameLen = tools.MaxNameLen
	// maxPrefixLen leaves at least 30 characters for the tool's own name.
	maxPrefixLen = 32
	hashSuffix   = 1 + 8
)

// modelPrefix is the prefix of an entry's tool names: the spec's name, or
// one derived from the server.
func modelPrefix(specName string, t *target) (string, error) {
	if specName == "" {
		return derivePrefix(t), nil
	}
	switch {
	case !tools.NamePattern.MatchString(specName):
		return "", &tools.ConfigError{Path: "name", Msg: fmt.Sprintf("%q is not a valid prefix (letters, digits, _ and -)", specName)}
	case len(specName) > maxPrefixLen:
		return "", &tools.ConfigError{Path: "name", Msg: fmt.Sprintf("%q is longer than %d characters, which leaves too little room for the tools' names", specName, maxPrefixLen)}
	case strings.Contains(specName, separator) || strings.HasSuffix(specName, "_"):
		return "", &tools.ConfigError{Path: "name", Msg: fmt.Sprintf("%q must not contain %q or end with \"_\": %q separates the prefix from the tool's name", specName, separator, separator)}
	}
	return specName, nil
}

// launchers are programs that run the server named by their first operand,
// which names the server better than the launcher does.
var launchers = map[string]bool{
	"npx": true, "bunx": true, "uvx": true, "pipx": true, "node": true, "bun": true, "deno": true,
	"python": true, "python3": true, "uv": true, "pnpm": true, "yarn": true,
}

// derivePrefix names an entry whose spec has no name: "self", the URL's
// host, or the stdio server's program (or, for a launcher such as npx, the
// package it runs).
func derivePrefix(t *target) string {
	var raw string
	switch t.kind {
	case kindSelf:
		return "self"
	case kindHTTP:
		if u, err := url.Parse(t.url); err == nil {
			raw = u.Hostname()
		}
	case kindStdio:
		raw = programName(t.command, t.args)
	}
	p := sanitize(raw)
	for strings.Contains(p, separator) {
		p = strings.ReplaceAll(p, separator, "_")
	}
	if len(p) > maxPrefixLen {
		p = p[:maxPrefixLen]
	}
	p = strings.Trim(p, "_")
	if p == "" {
		return "mcp"
	}
	return p
}

// programName is the base name of the program, or of the first operand of a
// launcher, without a version ("pkg@1.2") or script extension.
func programName(command string, args []string) string {
	name := filepath.Base(command)
	if launchers[strings.TrimSuffix(name, ".exe")] {
		for _, a := range args {
			if strings.HasPrefix(a, "-") || a == "run" || a == "dlx" || a == "exec" || a == "x" || a == "tool" {
				continue
			}
			name = path.Base(filepath.ToSlash(a))
			break
		}
	}
	if i := strings.LastIndex(name, "@"); i > 0 {
		name = name[:i]
	}
	if ext := path.Ext(name); ext != "" && len(ext) <= 4 {
		name = strings.TrimSuffix(name, ext)
	}
	return name
}

// modelName is the name the model sees for the server's tool named remote.
func modelName(prefix, remote string) string {
	room := maxNameLen - len(prefix) - len(separator)
	clean := sanitize(remote)
	if clean == remote && remote != "" && len(remote) <= room {
		return prefix + separator + remote
	}
	keep := min(len(clean), room-hashSuffix)
	return prefix + separator + clean[:keep] + "_" + shortHash(remote)
}

// sanitize replaces every character outside [a-zA-Z0-9_-] with "_".
func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// filter selects the server's tools the entry offers.
type filter []string

// match reports whether the entry offers the tool named remote.
func (f filter) match(remote string) bool {
	if len(f) == 0 {
		return true
	}
	for _, p := range f {
		if ok, _ := doublestar.Match(p, remote); ok {
			return true
		}
	}
	return false
}

// unmatched lists the entries naming a single tool (no glob characters)
// that is not among names: a typo that would otherwise silently leave the
// model without a tool its author asked for. A glob that matches nothing is
// not reported: it may well be waiting for tools the server adds later.
func (f filter) unmatched(names []string) []string {
	var out []string
	for _, p := range f {
		if strings.ContainsAny(p, `*?[{\`) {
			continue
		}
		found := false
		for _, n := range names {
			if ok, _ := doublestar.Match(p, n); ok {
				found = true
				break
			}
		}
		if !found {
			out = append(out, p)
		}
	}
	return out
}
