package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// typedTicks runs cmd and its batches and returns the pause ticks among
// their messages, the other messages left out.
func typedTicks(cmd tea.Cmd) []filterTypedMsg {
	if cmd == nil {
		return nil
	}
	switch msg := cmd().(type) {
	case filterTypedMsg:
		return []filterTypedMsg{msg}
	case tea.BatchMsg:
		var out []filterTypedMsg
		for _, c := range msg {
			out = append(out, typedTicks(c)...)
		}
		return out
	}
	return nil
}

// On a large capture the filter input shows each key at once, but the
// list applies the text only when typing pauses: the tick of an earlier
// key changes nothing, the last one's applies what was typed, and enter
// applies it without waiting.
func TestFilterAppliedAfterAPause(t *testing.T) {
	defer func(n int, d time.Duration) { filterPauseFrom, filterPause = n, d }(filterPauseFrom, filterPause)
	filterPauseFrom, filterPause = 0, time.Millisecond
	b := newBuilder(t)
	b.capture(t, 6, false)
	m := keys(t, newTestModel(t, b, 120, 40, "default"), "/")
	all := ids(m.rollouts.rows)
	var ticks [][]filterTypedMsg
	for _, r := range "r0003" {
		next, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
		m = next.(Model)
		ticks = append(ticks, typedTicks(cmd))
	}
	if got := ids(m.rollouts.rows); !slices.Equal(got, all) {
		t.Fatalf("rows while typing = %v, want all %v", got, all)
	}
	if v := m.View(); !strings.Contains(v, "/r0003") || !strings.Contains(v, "filtering…") {
		t.Errorf("while typing the input does not show /r0003 and filtering…:\n%s", v)
	}
	for i, ts := range ticks {
		if len(ts) != 1 {
			t.Fatalf("key %d brought %d pause ticks, want 1", i, len(ts))
		}
	}
	for _, ts := range ticks[:len(ticks)-1] {
		m = send(t, m, ts[0])
		if got := ids(m.rollouts.rows); !slices.Equal(got, all) {
			t.Fatalf("an earlier key's tick applied the filter: rows %v", got)
		}
	}
	m = send(t, m, ticks[len(ticks)-1][0])
	if got, want := ids(m.rollouts.rows), []string{"r0003"}; !slices.Equal(got, want) {
		t.Errorf("rows after the pause = %v, want %v", got, want)
	}
	if strings.Contains(m.View(), "filtering…") {
		t.Errorf("filtering… still said once applied")
	}

	// Enter applies at once; a tick that comes later changes nothing.
	m = keys(t, m, "backspace")
	next, cmd := m.Update(keyMsg("4"))
	m = next.(Model)
	late := typedTicks(cmd)
	m = keys(t, m, "enter")
	if got, want := ids(m.rollouts.rows), []string{"r0004"}; !slices.Equal(got, want) || m.rollouts.filtering {
		t.Errorf("rows after enter = %v (input open %v), want %v and the input closed", got, m.rollouts.filtering, want)
	}
	for _, msg := range late {
		m = send(t, m, msg)
	}
	if got, want := ids(m.rollouts.rows), []string{"r0004"}; !slices.Equal(got, want) {
		t.Errorf("rows after a late tick = %v, want %v", got, want)
	}
}

// A small capture applies every key at once: no pause to wait out.
func TestFilterAppliedAtOnceWhenSmall(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 6, false)
	m := keys(t, newTestModel(t, b, 120, 40, "default"), "/")
	next, cmd := m.Update(keyMsg("r"))
	m = next.(Model)
	if ts := typedTicks(cmd); len(ts) != 0 {
		t.Errorf("a key on %d spans brought a pause tick", m.snap.Stats.Stored)
	}
	m = typeText(t, run(t, m, cmd), "0002")
	if got, want := ids(m.rollouts.rows), []string{"r0002"}; !slices.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
}

// Few rollouts with many spans are judged off the UI goroutine too: the
// bound counts spans as well as rollouts.
func TestFilterOffUIGoroutineBySpans(t *testing.T) {
	defer func(n int) { matchAsyncSpans = n }(matchAsyncSpans)
	b := newBuilder(t)
	b.capture(t, 6, false)
	matchAsyncSpans = 1
	m := typeText(t, keys(t, newTestModel(t, b, 120, 40, "default"), "/"), "r000")
	before := ids(m.rollouts.rows)
	next, cmd := m.Update(keyMsg("3"))
	m = next.(Model)
	if got := ids(m.rollouts.rows); !slices.Equal(got, before) || !strings.Contains(m.View(), "filtering…") {
		t.Errorf("6 rollouts over the span bound judged in place: rows %v, want %v and filtering… said", got, before)
	}
	m = run(t, m, cmd)
	if got, want := ids(m.rollouts.rows), []string{"r0003"}; !slices.Equal(got, want) {
		t.Errorf("rows judged off the UI goroutine = %v, want %v", got, want)
	}
}
