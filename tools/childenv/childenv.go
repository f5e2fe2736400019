// Package childenv builds the environment of processes ruleagent starts for
// tools (bash commands, stdio MCP servers): an allowlist of this process's
// variables plus what the configuration adds, never the rest. API keys and
// other secrets in the server's environment therefore never reach them.
package childenv

import (
	"os"
	"slices"
)

// Inherited are the only variables a child process inherits: what
// programs need to find themselves, their files and the user's locale.
var Inherited = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES",
	"LC_COLLATE", "LC_NUMERIC", "LC_TIME", "LC_MONETARY", "TERM", "TZ", "TMPDIR", "NO_COLOR",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "SSL_CERT_FILE", "SSL_CERT_DIR",
}

// FallbackPath is PATH when this process has none.
const FallbackPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Build returns the allowlisted variables of this process, then extra,
// sorted for a stable order.
func Build(extra map[string]string) []string {
	vals := map[string]string{}
	for _, name := range Inherited {
		if v, ok := os.LookupEnv(name); ok {
			vals[name] = v
		}
	}
	if vals["PATH"] == "" {
		vals["PATH"] = FallbackPath
	}
	for k, v := range extra {
		vals[k] = v
	}
	env := make([]string, 0, len(vals))
	for k, v := range vals {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}
