package advise

import (
	"path/filepath"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

const realGymDir = "../../testdata/real-gym"

// realCapture reads one case of real Gym's captures with the variant it shows.
func realCapture(tb testing.TB, name string) (*whatif.Engine, *model.Snapshot) {
	tb.Helper()
	dir := filepath.Join(realGymDir, name)
	files, _ := filepath.Glob(filepath.Join(dir, "console", "*"))
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join(dir, "otlp", "*"))
	}
	if len(files) == 0 {
		tb.Fatalf("%s: no capture files", dir)
	}
	st := model.NewStore(model.Options{})
	tb.Cleanup(st.Close)
	if _, err := receiver.ReadFiles(st, files, receiver.ReadOptions{}); err != nil {
		tb.Fatalf("%s: %v", dir, err)
	}
	st.Sync()
	snap := st.Snapshot()
	v, _ := groups.DetectVariant(snap)
	return whatif.NewEngine(v.Registry()), snap
}

func mustBudget(tb testing.TB, s string) whatif.Budget {
	tb.Helper()
	b, err := whatif.ParseBudget(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
