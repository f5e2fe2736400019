package main

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/demo"
	"github.com/ruleagent/ruleagent/server"
)

// demoNotice says, on one line, that the chains' LLM globals are the
// demo model's, and how to set a real one.
const demoNotice = "no LLM configured: chains that use ${global.llm_url} and ${global.model} run on the built-in demo model " +
	"(scripted answers marked " + demo.Marker + "); set OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL " +
	"(or --global llm_url=... --global model=...) for a real one"

// useDemoModel points the LLM globals at the built-in demo model when
// neither a URL nor a model is configured, and reports whether they point
// there. A URL or a model alone is a configuration (a run then says what
// is missing): the demo never stands in for half of one.
func useDemoModel(g map[string]string) bool {
	if strings.TrimSpace(g["llm_url"]) != "" || strings.TrimSpace(g["model"]) != "" {
		return demo.IsURL(g["llm_url"])
	}
	g["llm_url"], g["model"] = demo.URL, demo.Model
	return true
}

// answersFromDemo reports whether a run of chain id asks the demo model:
// the chain has an agent on it, or a node of it runs a chain (flow, its
// targetId) that has. A chain of plain nodes, such as order-status, does
// not: run says nothing about the LLM for it.
func answersFromDemo(store *server.Store, id string) bool {
	on := store.OnDemoModel()
	if slices.Contains(on, id) {
		return true
	}
	dsl, _ := store.DSL(id)
	for _, t := range gjson.GetBytes(dsl, "metadata.nodes.#.configuration.targetId").Array() {
		if slices.Contains(on, t.String()) {
			return true
		}
	}
	return false
}
