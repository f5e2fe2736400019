package sessions

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// BoltFile is the embedded store's file name under the data folder.
const BoltFile = "sessions.db"

// Open opens the store a command-line spec names:
//
//	memory                      in the process's memory
//	bolt                        DATA/sessions.db (dataDir; the server's default)
//	bolt:PATH                   a bbolt file at PATH
//	redis://[user:pass@]host:port/db[?prefix=NAME:], rediss://...
func Open(ctx context.Context, spec, dataDir string) (Store, error) {
	switch {
	case spec == "memory":
		return NewMemory(), nil
	case spec == "bolt" || spec == "":
		if dataDir == "" {
			return nil, fmt.Errorf("session store bolt needs a data folder (--data)")
		}
		return OpenBolt(filepath.Join(dataDir, BoltFile))
	case strings.HasPrefix(spec, "bolt:"):
		return OpenBolt(strings.TrimPrefix(spec, "bolt:"))
	case strings.HasPrefix(spec, "redis://") || strings.HasPrefix(spec, "rediss://"):
		return OpenRedis(ctx, spec)
	}
	return nil, fmt.Errorf("session store %q: want memory, bolt, bolt:PATH or redis://host:port/db", spec)
}
