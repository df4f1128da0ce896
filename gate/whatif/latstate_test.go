package whatif

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// TestLatencyKeptIsFresh: over a store read a process's spans at a time
// (each snapshot changes rollouts, adds some and run-level traffic), one
// engine's profiles of every rollout, of parts of them and of a rollout
// twice, asked in turn so that each reads the profile kept before, are a
// fresh engine's.
func TestLatencyKeptIsFresh(t *testing.T) {
	for _, dir := range []string{"s41-obs0-iso/all", "s61-rl-iso/rl-all"} {
		files, _ := filepath.Glob(filepath.Join(realGymDir, dir, "console", "*"))
		if len(files) < 2 {
			t.Fatalf("%s: %d files, want a process's each", dir, len(files))
		}
		_, reg := realSnap(t, filepath.Join(realGymDir, dir))
		st := model.NewStore(model.Options{})
		t.Cleanup(st.Close)
		eng := NewEngine(reg)
		compared := 0
		for _, f := range files {
			if _, err := receiver.ReadFiles(st, []string{f}, receiver.ReadOptions{}); err != nil {
				t.Fatal(err)
			}
			st.Sync()
			snap := st.Snapshot()
			rolls := eng.Pieces(snap)
			n := len(rolls)
			for _, sel := range [][]*model.Rollout{rolls, rolls[:n/2], rolls[n/3:], rolls, append(rolls[:1:1], rolls[0]), rolls[1:]} {
				got, want := eng.Latency(snap, sel), NewEngine(reg).Latency(snap, sel)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s after %s, %d of %d rollouts: kept\n%+v\nfresh\n%+v", dir, filepath.Base(f), len(sel), n, got, want)
				}
				compared += got.Spans
			}
		}
		if compared == 0 {
			t.Fatalf("%s: no spans profiled", dir)
		}
	}
}

// TestWorthGrownIsFresh: over a store read a process's spans at a time,
// one engine's worth of each snapshot (its counts taken from the last
// snapshot's, the changed pieces taken out and put in) is a fresh
// engine's.
func TestWorthGrownIsFresh(t *testing.T) {
	for _, dir := range []string{"s41-obs0-iso/all", "s61-rl-iso/rl-all"} {
		files, _ := filepath.Glob(filepath.Join(realGymDir, dir, "console", "*"))
		_, reg := realSnap(t, filepath.Join(realGymDir, dir))
		st := model.NewStore(model.Options{})
		t.Cleanup(st.Close)
		eng := NewEngine(reg)
		spans := 0
		for _, f := range append(files, files[0]) {
			if _, err := receiver.ReadFiles(st, []string{f}, receiver.ReadOptions{}); err != nil {
				t.Fatal(err)
			}
			st.Sync()
			snap := st.Snapshot()
			for _, text := range []string{"default", "all"} {
				spec := reg.Resolve(text).Set
				got, want := eng.Worth(snap, spec, 0), NewEngine(reg).Worth(snap, spec, 0)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s after %s, spec %s: kept\n%+v\nfresh\n%+v", dir, filepath.Base(f), text, got, want)
				}
				for _, w := range got {
					spans += w.Spans
				}
			}
		}
		if spans == 0 {
			t.Fatalf("%s: no spans counted", dir)
		}
	}
}

// TestTimingSpreadKeptIsFresh: over a G3 store read a process's spans at a
// time, one engine's timing spread of each snapshot under specs asked in
// turn (each fragment's requests kept by version) is a fresh engine's.
func TestTimingSpreadKeptIsFresh(t *testing.T) {
	dir := "s52-g3-obs0-iso/all"
	files, _ := filepath.Glob(filepath.Join(realGymDir, dir, "console", "*"))
	_, reg := realSnap(t, filepath.Join(realGymDir, dir))
	st := model.NewStore(model.Options{})
	t.Cleanup(st.Close)
	eng := NewEngine(reg)
	requests := 0
	for _, f := range files {
		if _, err := receiver.ReadFiles(st, []string{f}, receiver.ReadOptions{}); err != nil {
			t.Fatal(err)
		}
		st.Sync()
		snap := st.Snapshot()
		for _, text := range []string{"default", "all", "per_rollout", "default"} {
			spec := reg.Resolve(text).Set
			fresh := NewEngine(reg)
			got, want := eng.TimingSpread(snap, eng.Preview(snap, spec)), fresh.TimingSpread(snap, fresh.Preview(snap, spec))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("after %s, spec %s: kept\n%+v\nfresh\n%+v", filepath.Base(f), text, got, want)
			}
			if got != nil {
				requests += got.Requests
			}
		}
	}
	if requests == 0 {
		t.Fatalf("%s: no request with a listener", dir)
	}
}
