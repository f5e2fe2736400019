// Package demo is ruleagent's built-in demo model: a scripted,
// deterministic stand-in for an OpenAI-compatible chat-completions server,
// served in process (no network hop), so that agents, tool calls,
// sub-agents, approvals and the streaming routes can be tried before any
// LLM is configured.
//
// It is selected by a reserved base URL, URL, which the command line's
// LLM globals default to when neither a URL nor a model is configured; the
// agent's LLM client routes that URL to Transport instead of the network.
// Every text answer starts with Marker, so nothing it says passes for a
// real model's answer, and every answer names Model.
//
// What it answers is decided from the request alone (see Decide): the last
// user message, the tools offered with their schemas, and the tool results
// already in the conversation. It imports none of ruleagent's packages, so
// any layer may use it.
package demo

import (
	"net/url"
	"strings"
)

const (
	// Host is the reserved host of the demo model. The .invalid top-level
	// domain never resolves (RFC 6761), so a request that somehow left the
	// process would fail rather than reach anyone.
	Host = "demo.ruleagent.invalid"
	// URL is the base URL that selects the demo model.
	URL = "http://" + Host + "/v1"
	// Model is the model name the demo answers with.
	Model = "ruleagent-demo"
	// Marker starts every text answer of the demo model.
	Marker = "[demo model]"
)

// IsURL reports whether a base URL selects the demo model: its host is
// Host (any scheme, path or case).
func IsURL(base string) bool {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		return false
	}
	return strings.EqualFold(u.Hostname(), Host)
}
