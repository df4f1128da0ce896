// Package realgym opens the shipped captures of NeMo Gym's real telemetry
// code (testdata/real-gym) for the tests of the gate packages built on the
// what-if engine.
package realgym

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// Dir is testdata/real-gym, wherever the test runs from.
func Dir() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..", "testdata", "real-gym")
}

// Cases names every shipped capture (its case directory below Dir), failing the
// test when the repository's set is not there.
func Cases(tb testing.TB) []string {
	tb.Helper()
	metas, _ := filepath.Glob(filepath.Join(Dir(), "*", "*", "meta.json"))
	if len(metas) < 10 {
		tb.Fatalf("%d real-Gym cases, want the repository's", len(metas))
	}
	names := make([]string, len(metas))
	for i, m := range metas {
		names[i], _ = filepath.Rel(Dir(), filepath.Dir(m))
	}
	return names
}

// Files returns a capture's files: its console logs, else its OTLP lines.
func Files(tb testing.TB, name string) []string {
	tb.Helper()
	dir := filepath.Join(Dir(), name)
	files, _ := filepath.Glob(filepath.Join(dir, "console", "*"))
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join(dir, "otlp", "*"))
	}
	if len(files) == 0 {
		tb.Fatalf("%s: no capture files", dir)
	}
	return files
}

// Read reads capture files into a store, with an engine for the variant
// they show.
func Read(tb testing.TB, files []string) (*whatif.Engine, *model.Snapshot) {
	tb.Helper()
	st := model.NewStore(model.Options{})
	tb.Cleanup(st.Close)
	if _, err := receiver.ReadFiles(st, files, receiver.ReadOptions{}); err != nil {
		tb.Fatalf("%v: %v", files, err)
	}
	st.Sync()
	snap := st.Snapshot()
	v, _ := groups.DetectVariant(snap)
	return whatif.NewEngine(v.Registry()), snap
}

// Capture reads one shipped capture.
func Capture(tb testing.TB, name string) (*whatif.Engine, *model.Snapshot) {
	tb.Helper()
	return Read(tb, Files(tb, name))
}
