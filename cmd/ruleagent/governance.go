package main

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/server"
)

// governance applies serve's --policy (read by server.LoadPolicyFile) and
// opens its audit log (--audit, under --data by default). The returned
// func closes the log.
func governance(f server.PolicyFile, auditDir, dataDir string, logger *slog.Logger) (server.Governance, func(), error) {
	g := server.Governance{Policy: f.Tools}
	if auditDir == "off" {
		return g, func() {}, nil
	}
	if auditDir == "" {
		auditDir = filepath.Join(dataDir, "audit")
	}
	log, err := audit.Open(auditDir, audit.Options{Logger: logger})
	if err != nil {
		return g, nil, fmt.Errorf("--audit: %w", err)
	}
	g.Audit = log
	return g, func() {
		if err := log.Close(); err != nil {
			logger.Error("closing the audit log", "err", err)
		}
	}, nil
}

// governanceBanner says which policy binds every agent and where the audit
// log goes.
func governanceBanner(w io.Writer, g server.Governance, policyArg string) {
	if g.Policy != nil {
		fmt.Fprintf(w, "  policy: %s\n", policyArg)
	}
	switch f := g.Sandbox; {
	case !f.Binds() && f.AllowLower:
		fmt.Fprintf(w, "  sandbox: %s by default; chains may ask for less (--allow-sandbox-off)\n", f.Mode)
	case !f.Binds():
		fmt.Fprintf(w, "  sandbox: %s\n", f.Mode)
	default:
		fmt.Fprintf(w, "  sandbox: %s, a floor no chain may lower\n", f.Mode)
	}
	if l, ok := g.Audit.(*audit.Log); ok {
		fmt.Fprintf(w, "  audit: %s\n", l.Dir())
	} else {
		fmt.Fprintln(w, "  audit: off")
	}
}
