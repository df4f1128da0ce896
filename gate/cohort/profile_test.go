package cohort

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// distinctValues is how the keys to compare were told span by span
// before profiles: distinctOf must agree with it.
//
// distinctValues returns, per attribute key, whether the capture's
// rollouts give it few enough distinct short values to compare value by
// value.
func distinctValues(snap *model.Snapshot, in *model.Interner) map[string]bool {
	seen := map[string]map[string]bool{}
	tooMany := map[string]bool{}
	note := func(a model.Attrs) {
		a.Each(in, func(k string, v model.Value) bool {
			if tooMany[k] {
				return true
			}
			s := v.String()
			vs := seen[k]
			if vs == nil {
				vs = map[string]bool{}
				seen[k] = vs
			}
			vs[s] = true
			if len(s) > maxValueLen || len(vs) > MaxValues {
				tooMany[k] = true
			}
			return true
		})
	}
	for _, r := range snap.Rollouts {
		for _, f := range r.Fragments {
			for i := range f.Spans {
				note(f.Spans[i].Attrs)
				if f.Spans[i].Extra != nil {
					for _, ev := range f.Spans[i].Extra.Events {
						note(ev.Attrs)
					}
				}
			}
		}
	}
	ok := map[string]bool{}
	for k, vs := range seen {
		// One value everywhere says no more than the span's kind does.
		ok[k] = !tooMany[k] && len(vs) > 1 && !endpointKey(k)
	}
	return ok
}

// TestDistinctOfProfiles: the keys compared value by value, merged from
// the rollouts' profiles, are those a walk over every span finds, on real
// captures; and profiles kept from one snapshot serve the next.
func TestDistinctOfProfiles(t *testing.T) {
	st := model.NewStore(model.Options{})
	defer st.Close()
	var prof *Profiles
	for _, dir := range []string{"s41-obs1-iso/all", "s52-g3-obs0-iso/all", "s61-rl-iso/rl-all"} {
		files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "real-gym", dir, "console", "*"))
		if _, err := receiver.ReadFiles(st, files, receiver.ReadOptions{}); err != nil || len(files) == 0 {
			t.Fatalf("%s: %v (%d files)", dir, err, len(files))
		}
		st.Sync()
		snap := st.Snapshot()
		v, _ := groups.DetectVariant(snap)
		eng := whatif.NewEngine(v.Registry())
		if prof == nil || prof.eng.Registry() != eng.Registry() {
			prof = NewProfiles(eng)
		}
		s := eng.Structure(snap).Snap
		want := distinctValues(s, s.Interner())
		got := distinctOf(prof, prof.of(s, s.Rollouts))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("after %s: from profiles %v, span by span %v", dir, got, want)
		}
		if kept := prof.comparable(); !reflect.DeepEqual(kept, want) {
			t.Errorf("after %s: as counted %v, span by span %v", dir, kept, want)
		}
		n := 0
		for _, ok := range want {
			if ok {
				n++
			}
		}
		if n == 0 {
			t.Errorf("after %s: no key compared value by value", dir)
		}
	}
}

// distinctOf is distinctValues merged over the profiles of every
// rollout, as comparisons merged them before the counts were kept.
func distinctOf(prof *Profiles, prs []*profile) map[string]bool {
	seen := map[string]map[string]bool{}
	tooMany := map[string]bool{}
	for _, pr := range prs {
		for _, k := range pr.over {
			tooMany[prof.name[k]], seen[prof.name[k]] = true, nil
		}
		for _, a := range pr.attrs {
			k, v := prof.name[a.key], prof.feats[a.f].Name
			if tooMany[k] {
				continue
			}
			vs := seen[k]
			if vs == nil {
				vs = map[string]bool{}
				seen[k] = vs
			}
			if vs[v] = true; len(vs) > MaxValues {
				tooMany[k], seen[k] = true, nil
			}
		}
	}
	ok := map[string]bool{}
	for k := range tooMany {
		ok[k] = false
	}
	for k, vs := range seen {
		if !tooMany[k] {
			ok[k] = len(vs) > 1 && !endpointKey(k)
		}
	}
	return ok
}

// TestKeptAcrossGrownStore: comparisons read from profiles one engine
// kept while the store grows, file after file of three captures, are
// those made afresh, row for row.
func TestKeptAcrossGrownStore(t *testing.T) {
	st := model.NewStore(model.Options{})
	defer st.Close()
	eng := whatif.NewEngine(groups.Default())
	prof := NewProfiles(eng)
	compared := 0
	for _, dir := range []string{"s41-obs1-iso/all", "s52-g3-obs0-iso/all", "s61-rl-iso/rl-all"} {
		files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "real-gym", dir, "console", "*"))
		if len(files) == 0 {
			t.Fatalf("%s: no files", dir)
		}
		for _, file := range files {
			if _, err := receiver.ReadFiles(st, []string{file}, receiver.ReadOptions{}); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			st.Sync()
			snap := st.Snapshot()
			s := eng.Structure(snap).Snap
			if len(s.Rollouts) == 0 {
				continue
			}
			asks := []string{"status=error", "id=" + s.Rollouts[0].ID, "id=" + s.Rollouts[len(s.Rollouts)-1].ID, "spans>20"}
			for _, ask := range asks {
				kept, kerr := CompareKept(eng, snap, filter.MustParse(ask), nil, nil, prof)
				fresh, ferr := CompareKept(eng, snap, filter.MustParse(ask), nil, nil, nil)
				if (kerr == nil) != (ferr == nil) {
					t.Fatalf("after %s, %q: kept %v, fresh %v", file, ask, kerr, ferr)
				}
				if kerr != nil {
					continue
				}
				if !reflect.DeepEqual(kept, fresh) {
					t.Errorf("after %s, %q: kept %d rows, fresh %d: they differ", file, ask, len(kept.Rows), len(fresh.Rows))
				}
				if len(kept.Rows) > 0 {
					compared++
				}
			}
		}
	}
	if compared < 6 {
		t.Fatalf("only %d comparisons with rows", compared)
	}
}
