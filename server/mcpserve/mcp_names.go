package mcpserve

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// The built-in MCP tools. A chain id equal to one of them is renamed by
// ToolName, so a chain never hides a built-in.
const (
	ToolListChains = "list_rule_chains"
	ToolGetChain   = "get_rule_chain"
	ToolSaveChain  = "save_rule_chain"
)

// maxToolNameLen is the longest tool name LLM APIs accept as a function name
// (OpenAI and Anthropic: ^[a-zA-Z0-9_-]{1,64}$). The MCP limit is wider
// (128, with dots), but an MCP client usually hands the names on to a model,
// our own agent included.
const maxToolNameLen = 64

// toolHashLen is the number of hex digits of the id's SHA-256 in a renamed
// id.
const toolHashLen = 10

// ToolName is the MCP tool name of chain id:
//
//   - An id made only of ASCII letters, digits, "_" and "-", at most 64
//     long, without "__" and not the name of a built-in tool, is its own
//     name: "send_email" stays "send_email".
//   - Any other id is renamed to a readable part, "__", and the first ten
//     hex digits of the id's SHA-256. The readable part is the id with each
//     run of other characters (and of "_") replaced by one "_", trimmed of
//     "_", cut so that the whole name fits 64 characters: "天气 agent"
//     becomes "agent__" plus ten hex digits, "list_rule_chains" becomes
//     "list_rule_chains__" plus ten hex digits.
//
// Kept names never contain "__" and renamed ones always do, so two chains
// share a name only if two renamed ids share 40 bits of their SHA-256; the
// server refuses the second such chain and logs it rather than merging them.
func ToolName(id string) string {
	if keepsItsName(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	suffix := "__" + hex.EncodeToString(sum[:])[:toolHashLen]
	var b strings.Builder
	gap := false
	for i := 0; i < len(id); i++ {
		c := id[i]
		if isNameByte(c) && c != '_' {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			gap = false
			b.WriteByte(c)
			continue
		}
		gap = true
	}
	readable := b.String()
	if room := maxToolNameLen - len(suffix); len(readable) > room {
		readable = strings.TrimRight(readable[:room], "_")
	}
	if readable == "" {
		readable = "chain"
	}
	return readable + suffix
}

// keepsItsName reports whether chain id is a tool name as it is.
func keepsItsName(id string) bool {
	if id == "" || len(id) > maxToolNameLen || strings.Contains(id, "__") {
		return false
	}
	switch id {
	case ToolListChains, ToolGetChain, ToolSaveChain:
		return false
	}
	for i := 0; i < len(id); i++ {
		if !isNameByte(id[i]) {
			return false
		}
	}
	return true
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
