package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/server"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/state/eventlog"
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

// open opens the run records and the event log beside the session store
// (nothing with --record-runs off); close ends them.
func (r *recordFlags) open(sess sessions.Store, replica string) (rec server.Recording, closeAll func(), err error) {
	closeAll = func() {}
	if r.retention == "off" {
		return rec, closeAll, nil
	}
	retention, err := ledger.ParseAge(r.retention)
	if err != nil || retention <= 0 {
		return rec, closeAll, usagef("--record-runs %q: want a duration such as 7d or 36h, or off", r.retention)
	}
	if r.maxBytes <= 0 {
		return rec, closeAll, usagef("--record-max-bytes %d: want a positive number of bytes", r.maxBytes)
	}
	ro := runrecord.Options{Retention: retention, MaxBytes: r.maxBytes}
	// The event log keeps as long as the records: a record without its
	// events cannot be compared in a replay.
	lo := eventlog.Options{Retention: retention}
	rec = server.Recording{MaxBytes: r.maxBytes, Replica: replica}
	switch s := sess.(type) {
	case *sessions.Bolt:
		if rec.Records, err = runrecord.NewBolt(s.DB(), ro); err != nil {
			return rec, closeAll, err
		}
		l, err := eventlog.NewBolt(s.DB(), lo)
		if err != nil {
			return rec, closeAll, err
		}
		rec.Events, closeAll = l, func() { _ = l.Close() }
	case *sessions.Redis:
		c := s.Conn()
		rec.Records = runrecord.NewRedis(c.Client, c.Prefix, ro)
		l := eventlog.NewRedis(c.Client, c.Prefix, lo)
		rec.Events, closeAll = l, func() { _ = l.Close() }
	case *sessions.Memory:
		// Nothing on disk: each record keeps its run's events itself.
		rec.Records = runrecord.NewMemory(ro)
	default:
		return rec, closeAll, fmt.Errorf("--record-runs: no run records beside a %T session store", sess)
	}
	return rec, closeAll, nil
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

// replicaName names this process as the owner of the event logs of its
// runs: unique in a fleet sharing one Redis.
func replicaName() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}
