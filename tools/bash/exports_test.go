package bash

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestNoTestSwitchInTheAPI: the switch that turns the command policy off
// is not part of this package's API (tests reach it through
// tools/internal/testhooks, which nothing outside the tools can import).
func TestNoTestSwitchInTheAPI(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			n := fd.Name.Name
			if strings.Contains(n, "Testing") || strings.Contains(n, "Disable") || strings.Contains(n, "PolicyOff") {
				t.Errorf("%s: exported %s looks like a test switch", name, n)
			}
		}
	}
}
