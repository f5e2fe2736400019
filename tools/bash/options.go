package bash

import (
	"fmt"
	"strings"
)

// optSpec describes the options of a launcher, so that the policy finds the
// command it launches exactly where the launcher would. An option the spec
// does not know is a refusal, not a guess: if it took a value, guessing
// wrong would make the policy check the wrong word as the command.
type optSpec struct {
	// shortArg letters take a value, attached (-uNAME) or next (-u NAME).
	shortArg string
	// shortOpt letters take an optional value, attached only (-i{}).
	shortOpt string
	// shortFlag letters take no value.
	shortFlag string
	// longArg options take a value (--unset=NAME or --unset NAME).
	longArg []string
	// longFlag options take no value, or an optional =value.
	longFlag []string
	// numeric accepts -N as an option (nice -10).
	numeric bool
	// plus accepts +x options as shells do (+e, +o name).
	plus bool
}

// opt is one parsed option. name is the letter or the long name.
type opt struct {
	name     string
	value    word
	hasValue bool
}

type opts []opt

func (os opts) has(names ...string) bool {
	for _, o := range os {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

func (os opts) value(names ...string) (word, bool) {
	var v word
	found := false
	for _, o := range os {
		for _, n := range names {
			if o.name == n && o.hasValue {
				v, found = o.value, true
			}
		}
	}
	return v, found
}

// parseOpts reads the options at the front of args, stopping at the first
// operand as launchers do. It returns the options and the index of the first
// operand.
func parseOpts(args []word, spec optSpec) (opts, int, error) {
	var out opts
	i := 0
	for i < len(args) {
		a := args[i]
		if !a.exact() {
			if a.flagSafe {
				return out, i, nil
			}
			return nil, 0, fmt.Errorf("argument %s is not a literal word, so it could be an option that changes what runs", a.src)
		}
		t := a.text
		if t == "--" {
			return out, i + 1, nil
		}
		isPlus := spec.plus && strings.HasPrefix(t, "+") && len(t) > 1
		if !isPlus && (len(t) < 2 || t[0] != '-') {
			return out, i, nil
		}
		if strings.HasPrefix(t, "--") {
			o, used, err := parseLong(args, i, spec)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, o)
			i += used
			continue
		}
		used := 1
		for j := 1; j < len(t); j++ {
			ch := t[j : j+1]
			switch {
			case spec.numeric && t[j] >= '0' && t[j] <= '9':
				out = append(out, opt{name: "N", value: literalWord(t[j:]), hasValue: true})
				j = len(t)
			case strings.Contains(spec.shortFlag, ch):
				out = append(out, opt{name: ch})
			case strings.Contains(spec.shortOpt, ch):
				out = append(out, opt{name: ch, value: literalWord(t[j+1:]), hasValue: j+1 < len(t)})
				j = len(t)
			case strings.Contains(spec.shortArg, ch):
				if j+1 < len(t) {
					out = append(out, opt{name: ch, value: literalWord(t[j+1:]), hasValue: true})
				} else {
					if i+1 >= len(args) {
						return nil, 0, fmt.Errorf("option %c%s needs a value", t[0], ch)
					}
					out = append(out, opt{name: ch, value: args[i+1], hasValue: true})
					used = 2
				}
				j = len(t)
			default:
				return nil, 0, fmt.Errorf("unknown option %c%s in %s", t[0], ch, a.src)
			}
		}
		i += used
	}
	return out, i, nil
}

// parseLong parses args[i], a --long option, accepting unambiguous
// abbreviations as getopt_long does. It returns how many words it used.
func parseLong(args []word, i int, spec optSpec) (opt, int, error) {
	name, value, hasEq := strings.Cut(args[i].text[2:], "=")
	match := func(list []string) []string {
		var hits []string
		for _, l := range list {
			if l == name {
				return []string{l}
			}
			if strings.HasPrefix(l, name) {
				hits = append(hits, l)
			}
		}
		return hits
	}
	withArg, flags := match(spec.longArg), match(spec.longFlag)
	switch {
	case len(withArg)+len(flags) == 0:
		return opt{}, 0, fmt.Errorf("unknown option --%s", name)
	case len(withArg)+len(flags) > 1 && !(len(withArg) == 1 && withArg[0] == name) && !(len(flags) == 1 && flags[0] == name):
		return opt{}, 0, fmt.Errorf("ambiguous option --%s", name)
	case len(withArg) == 1 && (len(flags) == 0 || withArg[0] == name):
		if hasEq {
			return opt{name: withArg[0], value: literalWord(value), hasValue: true}, 1, nil
		}
		if i+1 >= len(args) {
			return opt{}, 0, fmt.Errorf("option --%s needs a value", withArg[0])
		}
		return opt{name: withArg[0], value: args[i+1], hasValue: true}, 2, nil
	default:
		return opt{name: flags[0], value: literalWord(value), hasValue: hasEq}, 1, nil
	}
}
