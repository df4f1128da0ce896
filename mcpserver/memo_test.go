package mcpserver

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/receiver"
)

// TestMemo: preview, recommend and cohort answer a question asked again of
// the same snapshot with what a fresh server computes, page on through the
// kept preview, and answer anew once more spans arrived.
func TestMemo(t *testing.T) {
	srv, store, reg, v := newServer(t)
	cs := transports(t, srv)["stdio"]
	fresh := func() *Server {
		return New(Config{Source: store, Registry: reg, Variant: v, Setting: report.Setting{Spec: "default", Source: "default"}})
	}
	asks := []struct {
		tool string
		args map[string]any
		out  func() any
	}{
		{"preview", map[string]any{"spec": "per_rollout", "limit": 5}, func() any { return new(report.Preview) }},
		{"recommend", map[string]any{"budget": "30spans/rollout"}, func() any { return new(report.Recommend) }},
		{"cohort", map[string]any{"cohort": "status=error"}, func() any { return new(report.Cohort) }},
	}
	first := map[string]any{}
	for _, a := range asks {
		x, y, z := a.out(), a.out(), a.out()
		if e := call(t, cs, a.tool, a.args, x); e != "" {
			t.Fatalf("%s: %s", a.tool, e)
		}
		call(t, cs, a.tool, a.args, y)
		call(t, transports(t, fresh())["stdio"], a.tool, a.args, z)
		if !reflect.DeepEqual(x, y) || !reflect.DeepEqual(x, z) {
			t.Errorf("%s: asked again %+v, of a fresh server %+v, first %+v", a.tool, y, z, x)
		}
		first[a.tool] = x
	}

	// Page 2 of the kept preview is the fresh server's page 2.
	p1 := first["preview"].(*report.Preview)
	if p1.Page == nil || !p1.Page.Truncated {
		t.Fatalf("preview of limit 5 not paged: %+v", p1.Page)
	}
	var p2, q2 report.Preview
	next := map[string]any{"spec": "per_rollout", "limit": 5, "cursor": p1.Page.NextCursor}
	call(t, cs, "preview", next, &p2)
	call(t, transports(t, fresh())["stdio"], "preview", next, &q2)
	if !reflect.DeepEqual(p2, q2) || len(p2.PerRollout) == 0 || p2.PerRollout[0].RolloutID == p1.PerRollout[0].RolloutID {
		t.Errorf("page 2 %+v, fresh %+v", p2.PerRollout, q2.PerRollout)
	}

	// More spans: a new snapshot, new answers.
	files, _ := filepath.Glob("../testdata/real-gym/s41-obs1-iso/all/console/*")
	if _, err := receiver.ReadFiles(store, files, receiver.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	store.Sync()
	stored := store.Snapshot().Stats.Stored
	var p report.Preview
	call(t, cs, "preview", asks[0].args, &p)
	if p.Input.Spans != stored || p.Input.Spans == p1.Input.Spans {
		t.Errorf("preview after more spans reads %d spans, the store holds %d (before: %d)", p.Input.Spans, stored, p1.Input.Spans)
	}
	var r report.Recommend
	call(t, cs, "recommend", asks[1].args, &r)
	if was := first["recommend"].(*report.Recommend); r.Rollouts == was.Rollouts {
		t.Errorf("recommend after more rollouts still reads %d", r.Rollouts)
	}
	var c report.Cohort
	call(t, cs, "cohort", asks[2].args, &c)
	was := first["cohort"].(*report.Cohort)
	if c.Cohort.Rollouts+c.Baseline.Rollouts == was.Cohort.Rollouts+was.Baseline.Rollouts {
		t.Errorf("cohort after more rollouts still reads %d+%d", c.Cohort.Rollouts, c.Baseline.Rollouts)
	}
	// What was kept of the rollouts that did not change answers as a
	// fresh server does.
	for _, a := range asks {
		x, z := a.out(), a.out()
		call(t, cs, a.tool, a.args, x)
		call(t, transports(t, fresh())["stdio"], a.tool, a.args, z)
		if !reflect.DeepEqual(x, z) {
			t.Errorf("%s after more spans: %+v, a fresh server's %+v", a.tool, x, z)
		}
	}
}

// TestCutCohortIDs: a side with more rollouts than the bound lists the
// first of them, its count whole, and the page says so.
func TestCutCohortIDs(t *testing.T) {
	srv, _, _, _ := newServer(t)
	cs := transports(t, srv)["stdio"]
	var whole report.Cohort
	if e := call(t, cs, "cohort", map[string]any{"cohort": "status=error"}, &whole); e != "" {
		t.Fatal(e)
	}
	if whole.Page != nil || len(whole.Baseline.IDs) != whole.Baseline.Rollouts || whole.Baseline.Rollouts < 4 {
		t.Fatalf("20 rollouts cut: %+v", whole)
	}
	cut := whole
	cutCohortIDs(&cut, 3, nil)
	if !reflect.DeepEqual(cut.Baseline.IDs, whole.Baseline.IDs[:3]) || cut.Baseline.Rollouts != whole.Baseline.Rollouts ||
		cut.Page == nil || !cut.Page.Truncated || len(cut.Page.Notes) == 0 ||
		!strings.Contains(cut.Page.Notes[len(cut.Page.Notes)-1], fmt.Sprintf("baseline.rollout_ids lists 3 of %d", whole.Baseline.Rollouts)) {
		t.Errorf("cut to 3: %+v (page %+v)", cut.Baseline, cut.Page)
	}
}
