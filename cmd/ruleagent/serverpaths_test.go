package main

import (
	"path/filepath"
	"testing"
)

// Every flag naming a file or folder of the server becomes a server path;
// inline JSON names none, and --audit off has no log.
func TestServerPathsFromFlags(t *testing.T) {
	wd, _ := filepath.Abs(".")
	got := serverPaths(ownedPaths{chains: "chains", data: "data", sessionStore: "bolt:/srv/s.db", audit: "/var/log/ra",
		policy: "policy.json", prices: " {\"models\":{}}", budgets: "/etc/ra/budgets.json"})
	want := map[string]bool{ // path: secret
		filepath.Join(wd, "chains"): false, filepath.Join(wd, "data"): true, "/srv/s.db": true, "/var/log/ra": true,
		filepath.Join(wd, "policy.json"): false, "/etc/ra/budgets.json": false,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d paths, want %d: %+v", len(got), len(want), got)
	}
	for _, p := range got {
		secret, ok := want[p.Path]
		if !ok || secret != p.Secret || p.What == "" {
			t.Errorf("unexpected %+v", p)
		}
	}
	if got := serverPaths(ownedPaths{audit: "off", policy: `{"deny":["bash"]}`, sessionStore: "memory"}); len(got) != 0 {
		t.Errorf("no paths expected: %+v", got)
	}
}
