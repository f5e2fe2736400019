package bash

import (
	"os"
	"slices"
)

// inheritedEnv are the only variables a command inherits from the agent's
// process. Everything else, API keys above all, stays out; config env adds
// to this list explicitly.
var inheritedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES",
	"LC_COLLATE", "LC_NUMERIC", "LC_TIME", "LC_MONETARY", "TERM", "TZ", "TMPDIR", "NO_COLOR",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR", "SSL_CERT_FILE", "SSL_CERT_DIR",
}

const fallbackPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// commandEnv builds the environment of every command: the allowlisted
// variables of this process, then the config's, sorted for stable output.
func commandEnv(extra map[string]string) []string {
	vals := map[string]string{}
	for _, name := range inheritedEnv {
		if v, ok := os.LookupEnv(name); ok {
			vals[name] = v
		}
	}
	if vals["PATH"] == "" {
		vals["PATH"] = fallbackPath
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
