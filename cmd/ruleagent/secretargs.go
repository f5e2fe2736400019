package main

import (
	"os"
	"strings"

	"github.com/ruleagent/ruleagent/tools/scrub"
)

// Secrets on the command line. /proc/<pid>/cmdline is readable by every
// process on the machine, so a secret given as --global api_key=... or
// --token ... must not stay in the arguments the kernel keeps (see
// envguard_linux.go, which re-executes without them), and error text
// printed on stderr must not repeat it.

// secretValueFlags are flags whose value is a secret whatever it looks like.
var secretValueFlags = map[string]bool{"token": true, "api-key": true, "key": true, "password": true}

// withoutSecretArgs returns args without the secret flags and their
// values, and whether any was removed.
func withoutSecretArgs(args []string) ([]string, bool) {
	if len(args) == 0 {
		return args, false
	}
	out := []string{args[0]}
	removed := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		isFlag := strings.HasPrefix(a, "-")
		switch {
		case isFlag && name == "global" && hasValue:
			if secretGlobal(value) {
				removed = true
				continue
			}
		case isFlag && name == "global" && i+1 < len(args):
			if secretGlobal(args[i+1]) {
				removed = true
				i++
				continue
			}
		case isFlag && secretValueFlags[name] && hasValue:
			removed = true
			continue
		case isFlag && secretValueFlags[name] && i+1 < len(args):
			removed = true
			i++
			continue
		}
		out = append(out, a)
	}
	return out, removed
}

// secretGlobal reports whether a --global k=v holds a secret: by its name,
// or by a value the scrubber would redact.
func secretGlobal(kv string) bool {
	k, v, _ := strings.Cut(kv, "=")
	return v != "" && (scrub.IsSecretName(strings.TrimSpace(k)) || scrub.New().Scrub(v) != v)
}

// cliScrubber redacts from error text the secrets this process was given:
// secret variables of its environment and secret values on its command
// line, on top of the scrubber's patterns (provider keys, URL passwords).
func cliScrubber(args []string) *scrub.Scrubber {
	sc := scrub.New()
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); isSecretVar(k, v) {
			sc.AddSecrets(v)
		}
	}
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		switch {
		case name == "global":
			if _, v, _ := strings.Cut(value, "="); secretGlobal(value) {
				sc.AddSecrets(v)
			}
		case secretValueFlags[name]:
			sc.AddSecrets(value)
		}
	}
	return sc
}

// envFD names the variable that hands the memfd of secrets to the
// re-executed process (envguard_linux.go).
const envFD = "RULEAGENT_ENV_FD"

// isSecretVar: a variable is hidden when its name says it is a secret, or
// its value holds something the scrubber would redact (a URL with a
// password, a token).
func isSecretVar(name, value string) bool {
	if value == "" || name == envFD {
		return false
	}
	if scrub.IsSecretName(name) || strings.HasPrefix(name, "RULEAGENT_GLOBAL_") {
		return true
	}
	return scrub.New().Scrub(value) != value
}
