package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// globalFlag collects repeated --global k=v flags.
type globalFlag []string

func (g *globalFlag) String() string { return strings.Join(*g, ",") }

func (g *globalFlag) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want k=v, got %q", v)
	}
	*g = append(*g, v)
	return nil
}

// llmEnv maps the conventional OpenAI variables to the globals the example
// chains use.
var llmEnv = [][2]string{
	{"OPENAI_BASE_URL", "llm_url"},
	{"OPENAI_API_KEY", "api_key"},
	{"OPENAI_MODEL", "model"},
}

// globals resolves ${global.x} values, later sources winning:
// OPENAI_* variables, then RULEAGENT_GLOBAL_<K>=v (K lower-cased), then
// --global k=v flags.
func globals(environ []string, flags []string) map[string]string {
	g := map[string]string{}
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for _, m := range llmEnv {
		if v, ok := env[m[0]]; ok && v != "" {
			g[m[1]] = v
		}
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if name, ok := strings.CutPrefix(k, "RULEAGENT_GLOBAL_"); ok && name != "" {
			g[strings.ToLower(name)] = env[k]
		}
	}
	for _, f := range flags {
		k, v, _ := strings.Cut(f, "=")
		g[strings.TrimSpace(k)] = v
	}
	return g
}

func processGlobals(flags []string) map[string]string { return globals(os.Environ(), flags) }

func sortStrings(s []string) { slices.Sort(s) }
