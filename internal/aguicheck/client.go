package aguicheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// harnessPath is the Node harness, relative to the repository root.
const harnessPath = "test/peers/agui-verify.mjs"

// clientTimeout bounds one harness run, so a wedged node never hangs a test.
const clientTimeout = 2 * time.Minute

// VerifyWithClient runs events through the real @ag-ui/client pipeline (see
// test/peers/agui-verify.mjs) and fails t with the client's message if it
// rejects them or warns about them.
//
// Without node on PATH or test/peers/node_modules installed, the test is
// skipped (the whole of t: call it where nothing else of t is left to run,
// or use ClientSubtest), except under CI (the CI environment variable is set), where the
// real peer must run and its absence fails the test.
func VerifyWithClient(t testing.TB, events [][]byte) {
	t.Helper()
	VerifyAllWithClient(t, events)
}

// CheckStream judges a whole run's events both ways without making the
// caller's test depend on Node: the Go rules (Check) run in t itself, every
// time; the real client runs in a subtest of its own, "agui-client", which
// skips (or fails, under CI) alone when the peer is missing. The test's
// own assertions, before and after, run either way.
func CheckStream(t *testing.T, events [][]byte) {
	t.Helper()
	for _, v := range Check(events) {
		t.Errorf("AG-UI violation: %v", v)
	}
	ClientSubtest(t, events)
}

// ClientSubtest runs VerifyAllWithClient on streams in a subtest of t named
// "agui-client", so that a missing peer skips that subtest only.
func ClientSubtest(t *testing.T, streams ...[][]byte) {
	t.Helper()
	t.Run("agui-client", func(t *testing.T) { VerifyAllWithClient(t, streams...) })
}

// VerifyAllWithClient is VerifyWithClient for several streams, checked in one
// node process (start-up dominates the cost of a small stream).
func VerifyAllWithClient(t testing.TB, streams ...[][]byte) {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("locating the repository root: %v", err)
	}
	verdicts := clientVerdictsOrSkip(t, root, streams)
	for i, v := range verdicts {
		if v.Accepted {
			continue
		}
		if len(streams) == 1 {
			t.Errorf("@ag-ui/client rejected the stream: %s", v.Error)
		} else {
			t.Errorf("@ag-ui/client rejected stream %d: %s", i, v.Error)
		}
	}
}

// clientVerdict is the harness's judgement of one stream.
type clientVerdict struct {
	Accepted bool   `json:"accepted"`
	Error    string `json:"error"`
}

// clientVerdictsOrSkip runs the harness, turning a missing peer into a skip
// (or, under CI, a failure) and any other harness failure into a fatal error.
func clientVerdictsOrSkip(t testing.TB, root string, streams [][][]byte) []clientVerdict {
	t.Helper()
	skipWithoutPeer(t, root)
	verdicts, err := runClient(root, streams)
	if err != nil {
		t.Fatalf("running %s: %v", harnessPath, err)
	}
	return verdicts
}

// skipWithoutPeer skips t when the harness cannot run, or fails it under CI,
// where the real peer must run.
func skipWithoutPeer(t testing.TB, root string) {
	t.Helper()
	if missing := missingPeer(root); missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("the AG-UI client peer must run under CI, but %s; install it with: npm ci --prefix test/peers", missing)
		}
		t.Skipf("skipping the @ag-ui/client check: %s; install it with: npm ci --prefix test/peers", missing)
	}
}

// missingPeer says what prevents running the harness, or "" if nothing does.
func missingPeer(root string) string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not on PATH"
	}
	if _, err := os.Stat(filepath.Join(root, "test/peers/node_modules/@ag-ui/client")); err != nil {
		return "test/peers/node_modules/@ag-ui/client is not installed"
	}
	return ""
}

// runClient sends the streams to the harness in batch mode: one line per
// stream, a JSON array of the events' texts. Texts rather than objects, so an
// event that is not valid JSON still reaches the client's own parser.
func runClient(root string, streams [][][]byte) ([]clientVerdict, error) {
	var stdin bytes.Buffer
	enc := json.NewEncoder(&stdin)
	for _, events := range streams {
		texts := make([]string, len(events))
		for i, ev := range events {
			texts[i] = oneLine(ev)
		}
		if err := enc.Encode(texts); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(root, harnessPath), "--batch")
	cmd.Dir = root
	cmd.Stdin = &stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var verdicts []clientVerdict
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var v clientVerdict
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("reading verdicts: %w", err)
		}
		verdicts = append(verdicts, v)
	}
	if len(verdicts) != len(streams) {
		return nil, fmt.Errorf("got %d verdicts for %d streams: %s", len(verdicts), len(streams), strings.TrimSpace(stderr.String()))
	}
	return verdicts, nil
}

// oneLine compacts an event to the single line an SSE writer sends. Invalid
// JSON is passed on as written, for the client to reject in its own words.
func oneLine(ev []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, ev); err != nil {
		return string(ev)
	}
	return buf.String()
}

// repoRoot walks up from the working directory (a package directory, under
// go test) to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
