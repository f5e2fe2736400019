package bash

import (
	"fmt"
	"path"
	"strings"
)

// pattern is a deny pattern such as "rm -rf" or "git push --force": a command
// name, and flags and operands that must all be present for it to match. It
// matches the parsed command, so the order and spelling of the flags do not
// matter: "rm -rf" matches rm -fr, rm -r -f, rm -Rf, rm --recursive --force
// and rm --recur --force.
type pattern struct {
	source string
	// name is the lower-case command name; it may be a glob (mkfs*).
	name string
	// flags are the tokens starting with '-', as written.
	flags []string
	// operands are the other tokens; each must match some argument.
	operands []string
}

func parsePattern(s string) (pattern, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return pattern{}, fmt.Errorf("empty pattern")
	}
	p := pattern{source: strings.Join(fields, " "), name: strings.ToLower(path.Base(fields[0]))}
	if _, err := path.Match(p.name, ""); err != nil {
		return pattern{}, fmt.Errorf("%q: bad command name pattern: %w", s, err)
	}
	for _, f := range fields[1:] {
		if strings.HasPrefix(f, "-") && f != "-" && f != "--" {
			p.flags = append(p.flags, f)
			continue
		}
		if _, err := path.Match(f, ""); err != nil {
			return pattern{}, fmt.Errorf("%q: bad operand pattern %q: %w", s, f, err)
		}
		p.operands = append(p.operands, f)
	}
	return p, nil
}

func mustPatterns(sources ...string) []pattern {
	out := make([]pattern, len(sources))
	for i, s := range sources {
		p, err := parsePattern(s)
		if err != nil {
			panic(err)
		}
		out[i] = p
	}
	return out
}

// matchesName reports whether the pattern names the command.
func (p pattern) matchesName(base string) bool {
	ok, _ := path.Match(p.name, base)
	return ok
}

// match reports whether c matches the pattern. When it does not, but an
// argument that is not literal could make it match, that argument is
// returned: the rule cannot be verified and the caller refuses.
//
// Options are looked for before a literal "--" only, as getopt does; an
// unknown word after it cannot be an option. find is the exception: its --
// ends its own options, and the expression after it holds -delete and
// -exec.
func (p pattern) match(c *command) (matched bool, unverifiable *word) {
	if !p.matchesName(c.base) {
		return false, nil
	}
	options := c.args
	for i, a := range c.args {
		if a.exact() && a.text == "--" && c.base != "find" {
			options = c.args[:i]
			break
		}
	}
	flags := flagsOf(c.base, options, p.flags)
	flagsOK := true
	for _, f := range p.flags {
		flagsOK = flagsOK && flags.has(c.base, f)
	}
	operandsOK := true
	for _, op := range p.operands {
		operandsOK = operandsOK && anyArgMatchesOperand(c.args, op)
	}
	if flagsOK && operandsOK {
		return true, nil
	}
	var flagSuspect, operandSuspect *word
	for i := range options {
		if a := &options[i]; !a.exact() && !a.flagSafe && flagSuspect == nil {
			flagSuspect = a
		}
	}
	for i := range c.args {
		if a := &c.args[i]; !a.literal && operandSuspect == nil {
			operandSuspect = a
		}
	}
	switch {
	case !flagsOK && flagSuspect == nil, !operandsOK && operandSuspect == nil:
		return false, nil // something the pattern needs is certainly missing
	case !flagsOK:
		return false, flagSuspect
	default:
		return false, operandSuspect
	}
}

func anyArgMatchesOperand(args []word, op string) bool {
	for _, a := range args {
		if a.literal && valueMatches(a, op) {
			return true
		}
	}
	return false
}

// valueMatches compares one argument with an operand or denyArgs pattern:
// equal, equal as cleaned paths, matched by the pattern's glob, or, for a
// glob argument, able to expand to the pattern.
func valueMatches(a word, pat string) bool {
	v := a.text
	if a.glob {
		if ok, _ := path.Match(v, pat); ok {
			return true
		}
		if ok, _ := path.Match(path.Clean(v), path.Clean(pat)); ok {
			return true
		}
	}
	if v == pat {
		return true
	}
	if strings.Contains(pat, "/") && strings.Contains(v, "/") && path.Clean(v) == path.Clean(pat) {
		return true
	}
	if ok, _ := path.Match(pat, v); ok {
		return true
	}
	if strings.Contains(v, "/") {
		ok, _ := path.Match(pat, path.Clean(v))
		return ok
	}
	return false
}

// flagAliases maps option spellings to one canonical spelling, per command,
// for the commands whose deny rules look at options. Long options not listed
// here still match their abbreviations (GNU getopt accepts --recur for
// --recursive).
var flagAliases = map[string]map[string]string{
	"rm":     {"-R": "-r", "--recursive": "-r", "--force": "-f"},
	"cp":     {"-R": "-r", "--recursive": "-r", "--force": "-f"},
	"chmod":  {"--recursive": "-R"},
	"chown":  {"--recursive": "-R"},
	"chgrp":  {"--recursive": "-R"},
	"git":    {"--force": "-f"},
	"nc":     {"--exec": "-e", "--sh-exec": "-c"},
	"ncat":   {"--exec": "-e", "--sh-exec": "-c"},
	"netcat": {"--exec": "-e", "--sh-exec": "-c"},
	"curl":   {"--output": "-o", "--remote-name": "-O", "--remote-name-all": "-O"},
	"wget":   {"--output-document": "-O"},
	"sed":    {"--in-place": "-i"},
}

func canonicalFlag(base, f string) string {
	if c, ok := flagAliases[base][f]; ok {
		return c
	}
	return f
}

// flagSet holds every canonical spelling of the options a command was given.
type flagSet map[string]bool

// flagsOf collects the options among args. extraLongs are long options the
// caller asks about; abbreviations of them count as given.
func flagsOf(base string, args []word, extraLongs []string) flagSet {
	known := extraLongs
	for k := range flagAliases[base] {
		if strings.HasPrefix(k, "--") {
			known = append(known, k)
		}
	}
	set := flagSet{}
	add := func(f string) {
		set[f] = true
		set[canonicalFlag(base, f)] = true
	}
	for _, a := range args {
		if !a.exact() || len(a.text) < 2 || a.text[0] != '-' || a.text == "--" {
			continue
		}
		name, _, _ := strings.Cut(a.text, "=")
		if strings.HasPrefix(name, "--") {
			add(name)
			for _, k := range known {
				// An unambiguous prefix selects the option; an ambiguous one
				// is an error for the program, so counting it is harmless.
				if len(name) >= 3 && strings.HasPrefix(k, "--") && strings.HasPrefix(k, name) {
					add(k)
				}
			}
			continue
		}
		add(a.text)
		add(name)
		// Some programs (find, Go tools) spell long options with one dash.
		add("-" + name)
		for i := 1; i < len(name); i++ {
			add("-" + name[i:i+1])
		}
	}
	return set
}

// has reports whether the pattern flag f was given. A single-dash token of
// several letters (-rf) is a cluster: it is present when the same word was
// given, or when each of its letters was, in any form.
func (s flagSet) has(base, f string) bool {
	if s[f] || s[canonicalFlag(base, f)] {
		return true
	}
	if strings.HasPrefix(f, "--") {
		return s["-"+f[2:]]
	}
	if len(f) > 2 {
		for i := 1; i < len(f); i++ {
			if !s.has(base, "-"+f[i:i+1]) {
				return false
			}
		}
		return true
	}
	return false
}

// checkArgPattern validates a denyArgs entry.
func checkArgPattern(p string) error {
	if strings.TrimSpace(p) == "" {
		return fmt.Errorf("empty pattern")
	}
	if strings.ContainsAny(p, " \t\n") {
		return fmt.Errorf("%q: an argument pattern is one word; use deny for patterns with several words", p)
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("%q: bad pattern: %w", p, err)
	}
	return nil
}

// argMatches reports whether the literal argument a is, or may expand to,
// the denyArgs pattern p. Besides valueMatches it looks at the value of
// --opt=value and of=value forms and of attached short options (-f/path),
// abbreviations of a long option pattern, and short option clusters (-rf
// holds -f).
func argMatches(p string, a word) bool {
	candidates := []word{a}
	if _, v, ok := strings.Cut(a.text, "="); ok {
		candidates = append(candidates, word{text: v, literal: true, glob: a.glob})
	}
	isShortCluster := len(a.text) > 2 && a.text[0] == '-' && a.text[1] != '-'
	if isShortCluster {
		candidates = append(candidates, word{text: a.text[2:], literal: true, glob: a.glob})
	}
	for _, c := range candidates {
		if valueMatches(c, p) {
			return true
		}
	}
	name, _, _ := strings.Cut(a.text, "=")
	switch {
	case strings.HasPrefix(p, "--") && strings.HasPrefix(name, "--"):
		return len(name) >= 3 && strings.HasPrefix(p, name)
	case strings.HasPrefix(p, "--"):
		return name == "-"+p[2:]
	case len(p) == 2 && p[0] == '-' && isShortCluster:
		return strings.Contains(name[1:], p[1:])
	}
	return false
}
