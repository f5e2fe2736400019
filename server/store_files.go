package server

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The chains folder: finding its chain files and deploying them.

// chainFiles lists the *.json files under dir, sorted, skipping hidden
// files and folders (editors' and our own temporary files, .git) and
// node_modules folders (a package's JSON files are no chains).
func chainFiles(dir string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && (strings.HasPrefix(d.Name(), ".") || d.IsDir() && skippedDir(d.Name())) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(p, ".json") {
			paths = append(paths, p)
		}
		return nil
	})
	slices.Sort(paths)
	return paths, err
}

// skippedDir reports whether a folder of the chains folder holds no chains:
// a hidden one (.git), or node_modules.
func skippedDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules"
}

// LoadFile deploys one chain file, replacing a chain with the same id. The
// file is checked as a PUT of the API checks it; a file that fails leaves
// any running version of its chain alone and is reported by the chains API
// until it is fixed.
func (s *Store) LoadFile(path string) (string, error) {
	dsl, err := os.ReadFile(path)
	if err != nil {
		return "", s.markBroken(path, err)
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.watch.expect(path, dsl)
	id, err := s.deployFile(path, dsl)
	if err != nil {
		return id, s.markBroken(path, err)
	}
	s.mu.Lock()
	delete(s.broken, path)
	s.mu.Unlock()
	return id, nil
}

func (s *Store) markBroken(path string, err error) error {
	s.mu.Lock()
	s.broken[path] = err
	s.mu.Unlock()
	return ChainFile{Path: path, Err: err}
}

// deployFile validates and deploys the chain in file path. The caller
// holds saveMu.
func (s *Store) deployFile(path string, dsl []byte) (string, error) {
	fallback := strings.TrimSuffix(filepath.Base(path), ".json")
	own, err := ChainID(dsl)
	if err != nil {
		return "", &InvalidChainError{ID: fallback, Problems: problemsOf("", err)}
	}
	id := own
	if id == "" {
		id = fallback
	}
	s.mu.Lock()
	prev := ""
	for other, f := range s.files {
		if f == path {
			prev = other
		}
	}
	s.mu.Unlock()
	id, dsl, problems, warnings := s.validate(id, dsl, path, true)
	if len(problems) > 0 {
		return id, &InvalidChainError{ID: id, Problems: problems, Warnings: warnings}
	}
	if err := s.deploy(id, dsl); err != nil {
		return id, refusal(id, err, warnings)
	}
	for _, w := range warnings {
		s.log.Warn("chain file loads with a warning", "file", path, "path", w.Path, "warning", w.Message)
	}
	s.mu.Lock()
	s.files[id] = path
	s.mu.Unlock()
	if prev != "" && prev != id {
		// The file now holds another chain: the one it held is gone.
		s.undeploy(prev)
	}
	return id, nil
}

// ChainFiles lists the chain files of a chains folder as the store loads
// them: every *.json under dir, sorted, hidden files and folders and
// node_modules left out.
// ruleagent validate reads a folder with it.
func ChainFiles(dir string) ([]string, error) { return chainFiles(dir) }
