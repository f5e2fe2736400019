package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/server"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/state/runrecord"
)

// recordFlags are serve's run-recording flags.
type recordFlags struct {
	retention string
	maxBytes  int
}

func (r *recordFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.retention, "record-runs", "7d", "how long each run's record and events are kept after it ended, for the editor, replays and forks (e.g. 7d, 36h); off records nothing")
	fs.IntVar(&r.maxBytes, "record-max-bytes", 16<<20, "largest record of one run, in bytes; a run past it is shown but cannot be replayed")
}

// open opens the run records beside the session store (nothing with
// --record-runs off).
func (r *recordFlags) open(sess sessions.Store) (rec server.Recording, err error) {
	if r.retention == "off" {
		return rec, nil
	}
	retention, err := ledger.ParseAge(r.retention)
	if err != nil || retention <= 0 {
		return rec, usagef("--record-runs %q: want a duration such as 7d or 36h, or off", r.retention)
	}
	if r.maxBytes <= 0 {
		return rec, usagef("--record-max-bytes %d: want a positive number of bytes", r.maxBytes)
	}
	ro := runrecord.Options{Retention: retention, MaxBytes: r.maxBytes}
	// The runs' events are in serve's run log (DATA/state.db or the
	// fleet's Redis), for that log's retention; each record keeps its
	// run's events itself, for as long as the record is kept.
	rec = server.Recording{MaxBytes: r.maxBytes}
	switch s := sess.(type) {
	case *sessions.Bolt:
		if rec.Records, err = runrecord.NewBolt(s.DB(), ro); err != nil {
			return rec, err
		}
	case *sessions.Redis:
		c := s.Conn()
		rec.Records = runrecord.NewRedis(c.Client, c.Prefix, ro)
	case *sessions.Memory:
		// Nothing on disk: the records are kept in memory.
		rec.Records = runrecord.NewMemory(ro)
	default:
		return rec, fmt.Errorf("--record-runs: no run records beside a %T session store", sess)
	}
	return rec, nil
}

// recordBanner says where runs are recorded and for how long.
func recordBanner(w io.Writer, rec server.Recording, r *recordFlags) {
	if rec.Records == nil {
		fmt.Fprintln(w, "  runs: not recorded (--record-runs off)")
		return
	}
	size := strconv.Itoa(r.maxBytes) + " bytes"
	if r.maxBytes%(1<<20) == 0 {
		size = strconv.Itoa(r.maxBytes>>20) + " MiB"
	}
	fmt.Fprintf(w, "  runs: recorded in %s for %s, up to %s each (--record-runs)\n", rec.Records.Name(), r.retention, size)
}
