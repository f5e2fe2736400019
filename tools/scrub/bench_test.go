package scrub

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkScrub measures the shapes of input the wrapper sees: a short
// clean result, 64 KiB of clean output (this package's own source, and the
// clean test corpus, which is dense with names such as password and token
// that must be looked at and let through), and output with secrets in it.
func BenchmarkScrub(b *testing.B) {
	s := New().Child()
	s.AddSecrets("per-run-secret-value-1", "per-run-secret-value-2")
	small := "total 3\n-rw-r--r-- 1 user user 120 main.go\nok: 3 files, exit 0\n"
	code := fill(b, "*.go")
	dense := fill(b, "testdata/clean/*.txt")
	withSecrets := code[:8*1024] + "\nDB_PASSWORD=hunter2hunter2\nAuthorization: Bearer abcdef1234567890XYZ\n" +
		githubPAT + " " + jwtToken + "\n" + rsaBlock + "\npostgres://u:p4ss@db/app\n" + code[:8*1024]
	for _, c := range []struct {
		name string
		text string
	}{
		{"small_clean", small},
		{"64KiB_clean_code", code},
		{"64KiB_clean_dense", dense},
		{"secrets", withSecrets},
	} {
		if strings.Contains(c.name, "clean") && s.Scrub(c.text) != c.text {
			b.Fatalf("%s: the clean input is not clean", c.name)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			for b.Loop() {
				s.Scrub(c.text)
			}
		})
	}
}

// fill returns 64 KiB made of the files matching glob, repeated.
func fill(b *testing.B, glob string) string {
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		b.Fatalf("%s: no files", glob)
	}
	var sb strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue // the tests hold fake secrets
		}
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		sb.Write(data)
	}
	corpus := sb.String()
	return strings.Repeat(corpus, 64*1024/len(corpus)+1)[:64*1024]
}
