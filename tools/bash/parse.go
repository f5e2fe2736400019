package bash

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// dialect is a shell language the policy parses scripts in.
type dialect struct {
	name string
	lang syntax.LangVariant
}

var (
	dialectPOSIX = dialect{"POSIX sh", syntax.LangPOSIX}
	dialectBash  = dialect{"bash", syntax.LangBash}
	dialectMksh  = dialect{"mksh", syntax.LangMirBSDKorn}
	dialectZsh   = dialect{"zsh", syntax.LangZsh}
)

// dialectsForShell returns the dialects a script for the named shell must be
// parsed and checked in. Where a name can stand for more than one language
// (sh may be dash or bash; dash reads ((cmd)) as two subshells while bash
// reads it as arithmetic; bash decodes $'\x72m' while dash does not), the
// script is checked in each, so a command hidden from one reading is still
// seen by the other. A script that does not parse in all of them is refused.
func dialectsForShell(name string) ([]dialect, bool) {
	switch strings.ToLower(name) {
	case "bash", "rbash":
		return []dialect{dialectBash}, true
	case "sh", "dash", "ash", "posh", "yash":
		return []dialect{dialectPOSIX, dialectBash}, true
	case "ksh", "mksh", "ksh93", "pdksh", "oksh", "lksh":
		return []dialect{dialectMksh, dialectPOSIX, dialectBash}, true
	case "zsh":
		return []dialect{dialectZsh, dialectPOSIX, dialectBash}, true
	}
	return nil, false
}

func appendDialects(list []dialect, more ...dialect) []dialect {
	for _, d := range more {
		if !slices.Contains(list, d) {
			list = append(list, d)
		}
	}
	return list
}

// parse parses src in one dialect.
func parse(src string, d dialect) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(d.lang)).Parse(strings.NewReader(src), "")
}
