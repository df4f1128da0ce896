package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of gate/ or receiver/ may be,
// from its signature to its closing brace: past it, name its steps.
const maxFuncLines = 120

// longFuncs are the functions still past maxFuncLines, each with the
// length it may not grow beyond: a split drops its row.
var longFuncs = map[string]int{}

// TestFuncLength holds every function of gate/ and receiver/, test files
// aside, to maxFuncLines, and those of longFuncs to their length.
func TestFuncLength(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, root := range []string{"gate", "receiver"} {
		err := filepath.WalkDir(filepath.Join("..", root), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel("..", path)
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
				key := filepath.ToSlash(rel) + " " + fn.Name.Name
				limit, listed := longFuncs[key]
				if !listed {
					limit = maxFuncLines
				}
				seen[key] = listed
				if n > limit {
					t.Errorf("%s: %s is %d lines, over %d: split it into named steps", fset.Position(fn.Pos()), fn.Name.Name, n, limit)
				} else if listed && n <= maxFuncLines {
					t.Errorf("%s is %d lines now: drop its row from longFuncs", key, n)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for key := range longFuncs {
		if _, ok := seen[key]; !ok {
			t.Errorf("longFuncs lists %s, which is gone", key)
		}
	}
}
