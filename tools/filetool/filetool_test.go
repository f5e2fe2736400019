package filetool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/tools"
)

func TestWorkspaceConfigOpen(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		cfg  WorkspaceConfig
		bc   tools.BuildContext
		path string // expected ConfigError path; "" means success
	}{
		{"workDir", WorkspaceConfig{WorkDir: dir}, tools.BuildContext{}, ""},
		{"build context dir", WorkspaceConfig{}, tools.BuildContext{WorkDir: dir}, ""},
		{"deny escapes", WorkspaceConfig{WorkDir: dir, Deny: []string{"ok", "../x"}}, tools.BuildContext{}, "deny[1]"},
		{"deny workspace itself", WorkspaceConfig{WorkDir: dir, Deny: []string{"."}}, tools.BuildContext{}, "deny[0]"},
		{"workDir is a file", WorkspaceConfig{WorkDir: filepath.Join(dir, "f")}, tools.BuildContext{}, "workDir"},
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws, err := c.cfg.Open(c.bc)
			if c.path == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer ws.Close()
				if !ws.IsDenied(BackupDir+"/x") || ws.IsDenied(StateDir+"/other") {
					t.Fatal("the backup directory, and only it, must be denied")
				}
				return
			}
			var ce *tools.ConfigError
			if !errors.As(err, &ce) || ce.Path != c.path {
				t.Fatalf("err = %v, want a ConfigError at %s", err, c.path)
			}
		})
	}
}

func TestCheckRange(t *testing.T) {
	if err := CheckRange("n", 5, 1, 10); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{0, 11, -1} {
		var ce *tools.ConfigError
		if err := CheckRange("n", v, 1, 10); !errors.As(err, &ce) || ce.Path != "n" {
			t.Fatalf("CheckRange(%d) = %v", v, err)
		}
	}
}

func TestStatFile(t *testing.T) {
	dir := t.TempDir()
	ws, err := WorkspaceConfig{WorkDir: dir}.Open(tools.BuildContext{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if rel, fi, err := StatFile(ws, "f"); err != nil || rel != "f" || fi.Size() != 1 {
		t.Fatalf("StatFile(f) = %q, %v", rel, err)
	}
	for p, kind := range map[string]error{"fifo": tools.ErrInvalidArgs, "d": tools.ErrInvalidArgs, "nope": tools.ErrFileNotFound, "../x": tools.ErrInvalidPath} {
		if _, _, err := StatFile(ws, p); !errors.Is(err, kind) {
			t.Errorf("StatFile(%s) = %v, want %v", p, err, kind)
		}
	}
}

func TestPathLocks(t *testing.T) {
	var l PathLocks
	var wg sync.WaitGroup
	inside := map[string]int{}
	var mu sync.Mutex
	overlap := false
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []string{"a", "b"}[i%2]
			unlock := l.Lock(key)
			mu.Lock()
			inside[key]++
			if inside[key] > 1 {
				overlap = true
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			inside[key]--
			mu.Unlock()
			unlock()
		}()
	}
	wg.Wait()
	if overlap {
		t.Fatal("two holders of the same key at once")
	}
	if n := l.Held(); n != 0 {
		t.Fatalf("%d lock entries left after all were released", n)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1: "1 byte", 1023: "1023 bytes", 1536: "1.5 KiB", 10 * MiB: "10.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCtxError(t *testing.T) {
	if err := CtxError(context.DeadlineExceeded, "x"); !errors.Is(err, tools.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	if err := CtxError(context.Canceled, "x"); !errors.Is(err, tools.ErrExecutionFailed) {
		t.Fatalf("cancel: %v", err)
	}
}
