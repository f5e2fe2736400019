package edit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

// backupPerm keeps backups private to the owner: they may hold whatever the
// edited files held, secrets included.
const backupPerm = 0o600

// backupStore keeps the versions an edit replaces, under
// <workspace>/.ruleagent/backups/<session dir>/<path>.v<N>.
//
// It opens that directory as a workspace of its own, so every backup path,
// though built from a session key and a file path, stays inside it. The
// model's file tools cannot reach it: filetool denies BackupDir to them.
type backupStore struct {
	ws          *workspace.Workspace // the edited workspace
	maxHistory  int
	maxFileSize int64

	mu   sync.Mutex
	root *workspace.Workspace // BackupDir; nil until first needed
}

// backup is one stored version.
type backup struct {
	version int
	name    string // backup-root-relative path
	size    int64
	modTime time.Time
}

// sessionDir turns a session key into one safe path component. The key
// comes from the caller (a thread id may be chosen by a client), so it is
// never used as a path: up to 40 of its letters, digits, '-' and '_' keep the
// directory recognisable to an operator, and a hash of the whole key keeps
// distinct keys apart. No '.', '/' or NUL can survive.
func sessionDir(key string) string {
	sum := sha256.Sum256([]byte(key))
	var b strings.Builder
	for _, r := range key {
		if b.Len() >= 40 {
			break
		}
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	readable := strings.Trim(b.String(), "_-")
	if readable == "" {
		readable = "session"
	}
	return readable + "-" + hex.EncodeToString(sum[:12])
}

// open returns the backup root, opening it on first use. With create false
// a missing backup directory means there are no backups (nil, nil).
func (s *backupStore) open(create bool) (*workspace.Workspace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root != nil {
		return s.root, nil
	}
	wsRoot, err := s.ws.Root()
	if err != nil {
		return nil, err
	}
	if create {
		// Through the workspace's os.Root: it cannot create anything
		// outside the workspace, whatever .ruleagent has become.
		if err := wsRoot.MkdirAll(filetool.BackupDir, 0o700); err != nil {
			return nil, tools.Wrap(tools.ErrExecutionFailed, err, "creating the backup directory %s", filetool.BackupDir)
		}
	}
	// workspace.Open takes a path name, and would follow a symlink planted
	// at .ruleagent (by a shell command, say) out of the workspace. Refuse
	// anything but plain directories on the way.
	for _, p := range []string{filetool.StateDir, filetool.BackupDir} {
		fi, err := wsRoot.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) && !create {
			return nil, nil
		}
		if err != nil {
			return nil, tools.Wrap(tools.ErrExecutionFailed, err, "checking the backup directory")
		}
		if !fi.IsDir() {
			return nil, tools.Errorf(tools.ErrExecutionFailed, "%s is not a plain directory (%s); backups are refused until it is", p, fi.Mode().Type())
		}
	}
	root, err := workspace.Open(s.ws.Abs(filetool.BackupDir), workspace.Options{})
	if err != nil {
		return nil, tools.Wrap(tools.ErrExecutionFailed, err, "opening the backup directory")
	}
	// The name was checked, then opened: make sure both are the same
	// directory, so a swap in between cannot redirect the backups.
	checked, err1 := wsRoot.Lstat(filetool.BackupDir)
	broot, err2 := root.Root()
	var opened fs.FileInfo
	if err2 == nil {
		opened, err2 = broot.Stat(".")
	}
	if err1 != nil || err2 != nil || !os.SameFile(checked, opened) {
		root.Close()
		return nil, tools.Errorf(tools.ErrExecutionFailed, "the backup directory %s changed while it was being opened", filetool.BackupDir)
	}
	s.root = root
	return root, nil
}

// Close releases the backup root.
func (s *backupStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == nil {
		return nil
	}
	err := s.root.Close()
	s.root = nil
	return err
}

// save stores data as the next version of the workspace file rel for
// session, drops the versions beyond maxHistory, and returns the version.
func (s *backupStore) save(session, rel string, data []byte) (int, error) {
	root, err := s.open(true)
	if err != nil {
		return 0, err
	}
	base := path.Join(sessionDir(session), rel)
	vs, err := s.versionsIn(root, base)
	if err != nil {
		return 0, err
	}
	next := 1
	if len(vs) > 0 {
		next = vs[len(vs)-1].version + 1
	}
	if _, err := root.WriteFileAtomic(fmt.Sprintf("%s.v%d", base, next), data, backupPerm); err != nil {
		return 0, tools.Wrap(tools.ErrExecutionFailed, err, "backing up %s", rel)
	}
	for len(vs) >= s.maxHistory {
		// Pruning is best effort: a leftover old version is harmless.
		if r, err := root.Root(); err == nil {
			_ = r.Remove(vs[0].name)
		}
		vs = vs[1:]
	}
	return next, nil
}

// versions lists the backups of rel kept for session, oldest first.
func (s *backupStore) versions(session, rel string) ([]backup, error) {
	root, err := s.open(false)
	if err != nil || root == nil {
		return nil, err
	}
	return s.versionsIn(root, path.Join(sessionDir(session), rel))
}

func (s *backupStore) versionsIn(root *workspace.Workspace, base string) ([]backup, error) {
	_, entries, err := root.ReadDir(path.Dir(base))
	if errors.Is(err, tools.ErrFileNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, tools.Wrap(tools.ErrExecutionFailed, err, "listing backups")
	}
	prefix := path.Base(base) + ".v"
	var vs []backup
	for _, e := range entries {
		v, ok := versionOf(e.Name(), prefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		b := backup{version: v, name: path.Join(path.Dir(base), e.Name())}
		if info, err := e.Info(); err == nil {
			b.size, b.modTime = info.Size(), info.ModTime()
		}
		vs = append(vs, b)
	}
	slices.SortFunc(vs, func(a, b backup) int { return a.version - b.version })
	return vs, nil
}

// versionOf parses "<prefix><digits>".
func versionOf(name, prefix string) (int, bool) {
	digits, ok := strings.CutPrefix(name, prefix)
	if !ok || digits == "" || digits[0] == '0' {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.Atoi(digits)
	return v, err == nil
}

// load reads one stored version.
func (s *backupStore) load(b backup) ([]byte, error) {
	root, err := s.open(false)
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, tools.Errorf(tools.ErrFileNotFound, "the backup directory has gone")
	}
	_, data, err := root.ReadFile(b.name, s.maxFileSize)
	if err != nil {
		return nil, tools.Wrap(tools.ErrExecutionFailed, err, "reading backup v%d", b.version)
	}
	return data, nil
}

// all lists every backed-up file of session with its versions, by path.
func (s *backupStore) all(session string) (map[string][]backup, error) {
	root, err := s.open(false)
	if err != nil || root == nil {
		return nil, err
	}
	dir := sessionDir(session)
	broot, err := root.Root()
	if err != nil {
		return nil, err
	}
	if _, err := broot.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	out := map[string][]backup{}
	err = root.Walk(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		i := strings.LastIndex(p, ".v")
		if i < 0 {
			return nil
		}
		v, ok := versionOf(p[i:], ".v")
		if !ok {
			return nil
		}
		rel := strings.TrimPrefix(p[:i], dir+"/")
		b := backup{version: v, name: p}
		if info, err := d.Info(); err == nil {
			b.size, b.modTime = info.Size(), info.ModTime()
		}
		out[rel] = append(out[rel], b)
		return nil
	})
	if err != nil {
		return nil, tools.Wrap(tools.ErrExecutionFailed, err, "listing backups")
	}
	for _, vs := range out {
		slices.SortFunc(vs, func(a, b backup) int { return a.version - b.version })
	}
	return out, nil
}
