package main

import (
	"path/filepath"
	"strings"

	"github.com/ruleagent/ruleagent/tools"
)

// ownedPaths are the files and folders a ruleagent command reads its
// configuration from and keeps its state in, as its flags give them ("":
// none).
type ownedPaths struct {
	// chains is the chains folder (serve watches it: a file written
	// there is deployed), chainFile a chain file given instead.
	chains, chainFile string
	// data is --data: state.db, sessions.db (sessions, API keys, the
	// usage ledger, run records), the audit log by default.
	data string
	// sessionStore is --session-store (bolt:PATH names a file).
	sessionStore string
	// audit is --audit ("off": none).
	audit string
	// policy, prices and budgets are the flags' values: a file's path,
	// or inline JSON (which names no file).
	policy, prices, budgets string
}

// Hints the model reads in a refusal: the right way, where there is one.
const (
	chainsHint   = "agents change chains with the save_rule_chain tool, which checks what they may deploy"
	operatorHint = "only the operator changes it"
)

// serverPaths lists the paths of o that no agent's tool call may change,
// or, for the secret ones, read (see tools.ServerPath). Relative paths
// are taken from the working directory.
func serverPaths(o ownedPaths) []tools.ServerPath {
	var out []tools.ServerPath
	add := func(p, what string, secret bool, hint string) {
		if p == "" {
			return
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return
		}
		out = append(out, tools.ServerPath{Path: abs, What: what, Secret: secret, Hint: hint})
	}
	add(o.chains, "the server's chains folder", false, chainsHint)
	add(o.chainFile, "the chain file being run", false, operatorHint)
	add(o.data, "the server's data directory (sessions, API keys, run records, the usage ledger)", true, "")
	if p, ok := strings.CutPrefix(o.sessionStore, "bolt:"); ok {
		add(p, "the server's session store file (sessions, API keys)", true, "")
	}
	if o.audit != "off" {
		add(o.audit, "the server's audit log", true, "")
	}
	for _, f := range []struct{ arg, what string }{{o.policy, "the server's tool policy file"},
		{o.prices, "the server's price table file"}, {o.budgets, "the server's budgets file"}} {
		if arg := strings.TrimSpace(f.arg); arg != "" && !strings.HasPrefix(arg, "{") {
			add(arg, f.what, false, operatorHint)
		}
	}
	return out
}
