package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"

	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/sessions"
)

// openCLI opens the usage ledger of a command that runs chains in its own
// process (run, mcp --stdio), and returns what closes it once the store
// is closed (its last records written). It records into the ledger serve
// keeps, in the same store, when the command is given one: an explicit
// --data DIR (the embedded store DIR/sessions.db), a persistent session
// store (sess: bolt or Redis, whose ledger it joins), or a price table or
// budgets (which need the ledger; under --data, default ./data). Else it
// records nothing, as before, and opens no file. --usage-retention off
// keeps none.
func (u *usageFlags) openCLI(ctx context.Context, fs *flag.FlagSet, sess sessions.Store, data string, logger *slog.Logger) (*ledger.Ledger, func(), error) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	_, isMemory := sess.(*sessions.Memory)
	persistent := sess != nil && !isMemory
	if !given["data"] && !persistent && u.prices == "" && u.budgets == "" && !given["usage-retention"] {
		return nil, func() {}, nil
	}
	if u.retention == "off" {
		_, err := u.open(nil, logger)
		return nil, func() {}, err
	}
	store, closeStore := sess, func() {}
	if !persistent {
		s, err := sessions.Open(ctx, "bolt", data)
		if errors.Is(err, sessions.ErrLocked) {
			return nil, nil, fmt.Errorf("usage ledger: %w\n(a server records its own runs there: give this command another --data, or --usage-retention off)", err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("usage ledger: %w", err)
		}
		store, closeStore = s, func() { s.Close() }
	}
	l, err := u.open(store, logger)
	if err != nil {
		closeStore()
		return nil, nil, err
	}
	return l, func() { l.Close(); closeStore() }, nil
}
