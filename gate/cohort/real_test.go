package cohort

import (
	"path/filepath"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

const realGymDir = "../../testdata/real-gym"

// caseFiles returns a real capture's files: its console logs, else its
// OTLP lines.
func caseFiles(tb testing.TB, name string) []string {
	tb.Helper()
	dir := filepath.Join(realGymDir, name)
	files, _ := filepath.Glob(filepath.Join(dir, "console", "*"))
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join(dir, "otlp", "*"))
	}
	if len(files) == 0 {
		tb.Fatalf("%s: no capture files", dir)
	}
	return files
}

// readFiles reads capture files with the variant they show.
func readFiles(tb testing.TB, files []string) (*whatif.Engine, *model.Snapshot) {
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

// realCapture reads one case of real Gym's captures.
func realCapture(tb testing.TB, name string) (*whatif.Engine, *model.Snapshot) {
	tb.Helper()
	return readFiles(tb, caseFiles(tb, name))
}
