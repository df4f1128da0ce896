package mcpserver

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// TestCursorsAcrossSnapshots: get_rollout's tree and preview's
// per_rollout, paged while spans arrive between pages (the capture's
// other processes, whose spans hang in every rollout's tree; another
// run's rollouts, for which the oldest leave a bounded store), list every
// item of the first snapshot still stored once, none lost and none
// repeated: the pages after the change go on after the last item shown,
// as the newer snapshot lists them, and say the list changed.
func TestCursorsAcrossSnapshots(t *testing.T) {
	dir := "../testdata/real-gym/s41-obs0-iso/all/console/"
	_, reg, v := loaded(t, dir+"*")
	store := model.NewStore(model.Options{})
	t.Cleanup(store.Close)
	read := func(files ...string) {
		t.Helper()
		if _, err := receiver.ReadFiles(store, files, receiver.ReadOptions{}); err != nil {
			t.Fatal(err)
		}
		store.Sync()
	}
	read(dir+"driver.log.gz", dir+"agent.log.gz")
	srv := New(Config{Source: store, Registry: reg, Variant: v, Setting: report.Setting{Spec: "default", Source: "default"}})
	cs := transports(t, srv)["stdio"]

	var l report.RolloutList
	call(t, cs, "list_rollouts", map[string]any{"sort": "-spans", "limit": 1}, &l)
	if len(l.Rollouts) != 1 {
		t.Fatalf("no rollout listed: %+v", l)
	}
	id := l.Rollouts[0].RolloutID
	treeArgs := func(cursor string, n int) map[string]any {
		return map[string]any{"rollout_id": id, "depth": MaxDepth, "max_nodes": n, "cursor": cursor}
	}
	treeIDs := func(d report.RolloutDetail) []string {
		var out []string
		for _, n := range d.Tree {
			out = append(out, n.SpanID)
		}
		return out
	}
	var whole, first report.RolloutDetail
	call(t, cs, "get_rollout", treeArgs("", MaxNodes), &whole)
	call(t, cs, "get_rollout", treeArgs("", len(whole.Tree)-2), &first)
	rowIDs := func(p report.Preview) []string {
		var out []string
		for _, r := range p.PerRollout {
			out = append(out, r.RolloutID)
		}
		return out
	}
	if len(whole.Tree) < 8 || first.NextCursor == "" {
		t.Fatalf("too little to page: %d nodes (cursor %q)", len(whole.Tree), first.NextCursor)
	}
	// More spans: the model's and the resources server's, which hang
	// inside every rollout's tree, before the first page's last node too.
	read(dir+"model.log.gz", dir+"resources.log.gz")
	var grown report.RolloutDetail
	call(t, cs, "get_rollout", treeArgs("", MaxNodes), &grown)
	if len(grown.Tree) <= len(whole.Tree) {
		t.Fatalf("nothing arrived: %d nodes then %d", len(whole.Tree), len(grown.Tree))
	}

	check := func(what string, before, pageOne, after, now []string, notes []string) {
		t.Helper()
		// What left the store cannot be listed.
		before = slices.DeleteFunc(slices.Clone(before), func(x string) bool { return !slices.Contains(now, x) })
		got := append(slices.Clone(pageOne), after...)
		seen := map[string]bool{}
		for _, x := range got {
			if seen[x] {
				t.Errorf("%s: %s listed twice", what, x)
			}
			seen[x] = true
		}
		for _, x := range before {
			if !seen[x] {
				t.Errorf("%s: %s, listed before the spans arrived, was lost", what, x)
			}
		}
		last := pageOne[len(pageOne)-1]
		if i := slices.Index(now, last); i < 0 || !slices.Equal(after, now[i+1:]) {
			t.Errorf("%s: the pages after the change list %v, the newer list after %s is %v", what, after, last, now[slices.Index(now, last)+1:])
		}
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "the store changed since the previous page") }) {
			t.Errorf("%s: no note that the list changed: %q", what, notes)
		}
	}

	var after, notes []string
	for cur := first.NextCursor; cur != ""; {
		var d report.RolloutDetail
		if e := call(t, cs, "get_rollout", treeArgs(cur, 5), &d); e != "" {
			t.Fatal(e)
		}
		after, notes, cur = append(after, treeIDs(d)...), append(notes, d.Notes...), d.NextCursor
	}
	check("tree", treeIDs(whole), treeIDs(first), after, treeIDs(grown), notes)

	// Another run's rollouts into a store holding fewer spans than both
	// runs: the oldest rollouts leave, those listed first among them.
	bounded := model.NewStore(model.Options{MaxSpans: 1990})
	t.Cleanup(bounded.Close)
	files, _ := filepath.Glob(dir + "*")
	if _, err := receiver.ReadFiles(bounded, files, receiver.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	bounded.Sync()
	cs = transports(t, New(Config{Source: bounded, Registry: reg, Variant: v, Setting: report.Setting{Spec: "default", Source: "default"}}))["stdio"]
	var all, p1 report.Preview
	call(t, cs, "preview", map[string]any{"spec": "all", "limit": MaxRolloutRows}, &all)
	call(t, cs, "preview", map[string]any{"spec": "all", "limit": 8}, &p1)
	more, _ := filepath.Glob("../testdata/real-gym/s41-obs1-iso/all/console/*")
	if _, err := receiver.ReadFiles(bounded, more, receiver.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	bounded.Sync()
	var allNow report.Preview
	call(t, cs, "preview", map[string]any{"spec": "all", "limit": MaxRolloutRows}, &allNow)
	left := 0
	for _, x := range rowIDs(all) {
		if !slices.Contains(rowIDs(allNow), x) {
			left++
		}
	}
	if p1.Page == nil || p1.Page.NextCursor == "" || left == 0 || !slices.Contains(rowIDs(allNow), rowIDs(p1)[7]) || len(allNow.PerRollout) <= len(all.PerRollout)-left {
		t.Fatalf("want rollouts listed first to leave, the page's last to stay, others to arrive: %d rollouts then, %d now, %d left", len(all.PerRollout), len(allNow.PerRollout), left)
	}
	after, notes = nil, nil
	for cur := p1.Page.NextCursor; cur != ""; {
		var p report.Preview
		if e := call(t, cs, "preview", map[string]any{"spec": "all", "limit": 4, "cursor": cur}, &p); e != "" {
			t.Fatal(e)
		}
		after, cur = append(after, rowIDs(p)...), ""
		if p.Page != nil {
			notes, cur = append(notes, p.Page.Notes...), p.Page.NextCursor
		}
	}
	check("per_rollout", rowIDs(all), rowIDs(p1), after, rowIDs(allNow), notes)

	// A tree's cursor is of its rollout's tree only.
	if e := call(t, cs, "get_rollout", map[string]any{"rollout_id": l.Rollouts[0].RolloutID + "x", "cursor": first.NextCursor}, nil); !strings.Contains(e, "another list") {
		t.Errorf("another rollout's cursor: %q", e)
	}
}
