package contract

import (
	"bytes"
	"github.com/nemo-gym/gymtrace/gate/internal/realgym"
	"os"
	"path/filepath"
	"testing"

	"github.com/nemo-gym/gymtrace/internal/testfile"
)

// profile measures a real case.
func profile(tb testing.TB, name string) *Profile {
	tb.Helper()
	return Measure(realgym.Capture(tb, name))
}

// tampered writes a real case's console logs to a temporary folder, the
// lines of the log named role passed through edit (which may drop a line
// by returning nil), and returns the new files.
func tampered(tb testing.TB, name, role string, edit func(line []byte) []byte) []string {
	tb.Helper()
	dir := tb.TempDir()
	var out []string
	for _, f := range realgym.Files(tb, name) {
		var buf bytes.Buffer
		base := filepath.Base(f)
		for _, l := range testfile.Lines(tb, f) {
			if base == role+".log.gz" {
				if l = edit(l); l == nil {
					continue
				}
			}
			buf.Write(l)
			buf.WriteByte('\n')
		}
		p := filepath.Join(dir, base[:len(base)-len(".gz")])
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}
