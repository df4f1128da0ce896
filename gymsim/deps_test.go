package gymsim

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports guards the package's independence: its truth is what it sent,
// so it must not import what it checks (gate, model, receiver, tui).
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("glob: %v (%d files)", err, len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, banned := range []string{"/gate", "/model", "/receiver", "/tui"} {
				if strings.HasPrefix(path, "github.com/nemo-gym/gymtrace") && strings.HasSuffix(path, banned) {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
}
