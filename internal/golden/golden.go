// Package golden compares a test's output with its golden file,
// testdata/<test name>.golden, and rewrites the file instead when the tests
// run with -update. It is the one golden helper and the one -update flag of
// every package's tests: a changed golden is read in review, never
// regenerated blindly.
package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata instead of comparing with them")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// Path is the golden file of tb: testdata/<tb.Name()>.golden, so a subtest's
// golden sits in its test's directory (testdata/TestScreens/list-80x24.golden).
func Path(tb testing.TB) string {
	return filepath.Join("testdata", filepath.FromSlash(tb.Name())+".golden")
}

// CheckNamed is Check for a test that keeps several goldens of its own:
// testdata/<top-level test>/<name>.golden.
func CheckNamed(tb testing.TB, name string, got []byte) {
	tb.Helper()
	check(tb, filepath.Join("testdata", strings.Split(tb.Name(), "/")[0], name+".golden"), got)
}

// Check compares got with tb's golden file, or rewrites the file under
// -update. A mismatch names the file and the first line that differs, then
// shows got whole, so a screen can be read as it is.
func Check(tb testing.TB, got []byte) {
	tb.Helper()
	check(tb, Path(tb), got)
}

func check(tb testing.TB, path string, got []byte) {
	tb.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read golden (go test -update writes it): %v", err)
	}
	if string(want) != string(got) {
		tb.Errorf("%s differs (go test -update rewrites it; read the diff): %s\ngot:\n%s", path, firstDiff(string(got), string(want)), got)
	}
}

// firstDiff says where got and want first differ, by line.
func firstDiff(got, want string) string {
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w || i >= len(gl) || i >= len(wl) {
			return fmt.Sprintf("line %d\n got: %q\nwant: %q", i+1, g, w)
		}
	}
	return "no line differs"
}
