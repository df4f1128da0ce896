package tui

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/model"
)

// evidenceModel opens a real-Gym capture with its evidence files, as
// gymtrace open --evidence does.
func evidenceModel(tb testing.TB, name string, w, h int) Model {
	tb.Helper()
	set, err := evidence.Read(filepath.Join(realGym, name, "evidence"))
	if err != nil {
		tb.Fatal(err)
	}
	given := false
	return realModelWith(tb, name, w, h, "all", func(o *Options) {
		o.Evidence = func() (*evidence.Set, bool, error) {
			changed := !given
			given = true
			return set, changed, nil
		}
	})
}

func TestEvidenceColumnsAndFilter(t *testing.T) {
	m := evidenceModel(t, "s41-obs1-iso/all", 120, 40)
	if m.rollouts.ev == nil || m.rollouts.ev.Coverage.Exact != 20 {
		t.Fatalf("the list has no join of the files: %+v", m.rollouts.ev)
	}
	view := ansi.Strip(m.View())
	for _, want := range []string{"reward", "outcome", "http_error", "reward avg 0.76"} {
		if !strings.Contains(view, want) {
			t.Errorf("the screen lacks %q:\n%s", want, view)
		}
	}
	// The filter's evidence terms, as --where reads them.
	f := keys(t, m, "/")
	f = typeText(t, f, "reward=0")
	f = keys(t, f, "enter")
	if f.rollouts.filterErr != "" || len(listed(f)) != 4 {
		t.Fatalf("reward=0 lists %v (%s), want the 4 rollouts rewarded 0", listed(f), f.rollouts.filterErr)
	}
	for _, id := range listed(f) {
		if o := m.rollouts.ev.Set.Of(id); o == nil || o.Reward != 0 {
			t.Errorf("%s listed under reward=0: %+v", id, o)
		}
	}
	// Sorted by reward, lowest first: the rewarded-0 rows lead, those the
	// files give no reward (failures) come last.
	s := evidenceModel(t, "s41-obs1-iso/all", 120, 40) // panels are shared by the copies: a fresh one
	for s.rollouts.sort != sortReward {
		s = keys(t, s, "s")
	}
	rows := s.rollouts.rows
	if o := s.rollouts.ev.Set.Of(rows[0].ID); o == nil || o.Reward != 0 {
		t.Errorf("first row under the reward sort: %s %+v", rows[0].ID, o)
	}
	var last *model.Rollout
	for _, r := range rows {
		if !isApart(r.ID) {
			last = r
		}
	}
	if o := s.rollouts.ev.Set.Of(last.ID); o == nil || o.HasReward() {
		t.Errorf("last row under the reward sort: %s %+v, want a failure without reward", last.ID, o)
	}
}

func TestEvidenceNotJoinableSaysWhy(t *testing.T) {
	m := evidenceModel(t, "s41-obs0-iso/all", 120, 40)
	view := ansi.Strip(m.View())
	if !strings.Contains(view, "evidence 0/20 joined: no rollout ids") {
		t.Errorf("the screen does not say why nothing joined:\n%s", view)
	}
	if strings.Contains(view, "outcome") {
		t.Errorf("evidence columns with nothing joined:\n%s", view)
	}
}

// Beside a live job Gym's files grow: a poll that reads more rows changes
// the join, the columns and a filter on them, and one that fails says so
// in the header while the last rows stay.
func TestEvidenceGrowsLive(t *testing.T) {
	m := evidenceModel(t, "s41-obs1-iso/all", 120, 40)
	f := keys(t, m, "/")
	f = typeText(t, f, "reward>0")
	f = keys(t, f, "enter")
	before := len(listed(f))
	// A later poll: every rollout now rewarded 1.
	dir := t.TempDir()
	var rows []string
	for _, r := range f.check.Structure.Rollouts {
		rows = append(rows, `{"_ng_rollout_id": "`+r.ID+`", "reward": 1}`)
	}
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(strings.Join(rows, "\n") + "\n")
	set, err := evidence.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := send(t, f, evidenceMsg{set: set, changed: true})
	if after := len(listed(g)); before != 13 || after != 20 {
		t.Fatalf("reward>0 lists %d, then %d after the files grew; want 13, then 20", before, after)
	}
	g = send(t, g, evidenceMsg{set: set, err: errors.New("evidence rollouts.jsonl: permission denied")})
	if v := ansi.Strip(g.View()); !strings.Contains(v, "evidence: evidence rollouts.jsonl: permission denied") || len(listed(g)) != 20 {
		t.Errorf("a failed poll: %d listed, screen:\n%s", len(listed(g)), v)
	}
}
