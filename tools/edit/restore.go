package edit

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
)

// restore is operation restore: it writes a backup version back, after
// backing up what it replaces, so a restore can itself be undone. Only the
// calling session's backups are candidates; another session's versions of
// the same file do not exist from here.
func (t *Tool) restore(session string, a Args) (string, error) {
	if a.Version < 0 {
		return "", tools.Errorf(tools.ErrInvalidArgs, "version must be positive, got %d", a.Version)
	}
	// The file may have been deleted since; restoring recreates it.
	rel, err := t.ws.ResolveNew(a.Path)
	if err != nil {
		return "", err
	}
	unlock := t.locks.Lock(rel)
	defer unlock()

	vs, err := t.backups.versions(session, rel)
	if err != nil {
		return "", err
	}
	if len(vs) == 0 {
		return "", tools.Errorf(tools.ErrFileNotFound, "there are no backups of %s in this session; edit makes one before every change", rel)
	}
	pick := vs[len(vs)-1]
	if a.Version != 0 {
		i := slices.IndexFunc(vs, func(b backup) bool { return b.version == a.Version })
		if i < 0 {
			return "", tools.Errorf(tools.ErrFileNotFound, "there is no backup v%d of %s in this session; it has %s", a.Version, rel, versionList(vs))
		}
		pick = vs[i]
	}
	data, err := t.backups.load(pick)
	if err != nil {
		return "", err
	}

	saved := ""
	cur, err := t.current(rel)
	switch {
	case err != nil:
		return "", err
	case cur != nil && bytes.Equal(cur, data):
		return "", tools.Errorf(tools.ErrInvalidArgs, "%s already has the content of backup v%d; nothing was changed", rel, pick.version)
	case cur != nil:
		v, err := t.backups.save(session, rel, cur)
		if err != nil {
			return "", tools.Wrap(tools.ErrExecutionFailed, err, "%s was not restored, because backing up its current content failed", rel)
		}
		saved = fmt.Sprintf("; its previous content is now backup v%d", v)
	}
	if _, err := t.ws.WriteFileAtomic(rel, data, 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("restored %s to backup v%d (%s)%s", rel, pick.version, filetool.Size(int64(len(data))), saved), nil
}

// current reads the file at rel, or returns nil content if it does not
// exist.
func (t *Tool) current(rel string) ([]byte, error) {
	if _, _, err := filetool.StatFile(t.ws, rel); err != nil {
		if errors.Is(err, tools.ErrFileNotFound) {
			return nil, nil
		}
		return nil, err
	}
	_, data, err := t.ws.ReadFile(rel, t.cfg.MaxFileSize)
	return data, err
}

// listBackups is operation list_backups: one file's versions, or, without a
// path, every file this session has backups of.
func (t *Tool) listBackups(session string, a Args) (string, error) {
	if strings.TrimSpace(a.Path) == "" {
		all, err := t.backups.all(session)
		if err != nil {
			return "", err
		}
		if len(all) == 0 {
			return "there are no backups in this session", nil
		}
		paths := slices.Sorted(maps.Keys(all))
		var b strings.Builder
		b.WriteString("files with backups in this session (restore with operation restore and the file's path):\n")
		for _, p := range paths {
			fmt.Fprintf(&b, "%s: %s\n", p, versionList(all[p]))
		}
		return b.String(), nil
	}
	rel, err := t.ws.ResolveNew(a.Path)
	if err != nil {
		return "", err
	}
	vs, err := t.backups.versions(session, rel)
	if err != nil {
		return "", err
	}
	if len(vs) == 0 {
		return fmt.Sprintf("there are no backups of %s in this session", rel), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "backups of %s in this session, newest first (restore takes the newest unless you give version):\n", rel)
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		fmt.Fprintf(&b, "v%d  %s  %s\n", v.version, v.modTime.UTC().Format(time.RFC3339), filetool.Size(v.size))
	}
	return b.String(), nil
}

func versionList(vs []backup) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = fmt.Sprintf("v%d", v.version)
	}
	return strings.Join(names, ", ")
}
