package tui

import (
	"errors"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/model"
)

// spanSearch finds spans of the shown rollout by name, attribute key or
// value, span id or trace id, or by the rollout filter's terms read on one
// span (status=error, http.status_code>=500, dur>1s); n and N step
// through the hits.
type spanSearch struct {
	input  textinput.Model
	typing bool
	query  string
	// err says why the query does not parse as filter terms (a term half
	// typed: dur>1); the hits are then the query's text alone.
	err  string
	hits []spanRef // in fragment and span order
	set  map[spanRef]bool
	at   int // index in hits of the cursor's span, -1 when elsewhere
}

func newSpanSearch(st *Styles) spanSearch {
	in := textinput.New()
	in.Cursor.SetMode(cursor.CursorStatic)
	in.Prompt = "search spans: "
	in.PromptStyle = st.Input.Prompt
	in.Placeholder = "name, attribute, span or trace id; status=error dur>1s key>=N"
	return spanSearch{input: in, at: -1}
}

func (s *spanSearch) setWidth(w int) { s.input.Width = max(w-len(s.input.Prompt)-2, 4) }

func (s *spanSearch) start() {
	s.typing = true
	s.input.SetValue(s.query)
	s.input.CursorEnd()
	s.input.Focus()
}

func (s *spanSearch) clear() {
	s.typing, s.query, s.err, s.hits, s.set, s.at = false, "", "", nil, nil, -1
	s.input.Blur()
}

func (s *spanSearch) hit(frag, idx int32) bool { return s.set[spanRef{frag, idx}] }

// status is "2/5" (the cursor on the second hit), "5 hits" or "no match",
// or why the terms do not parse when nothing matches.
func (s *spanSearch) status() string {
	switch {
	case len(s.hits) == 0 && s.err != "":
		return "no match · " + s.err
	case len(s.hits) == 0:
		return "no match"
	case s.at >= 0:
		return itoa(s.at+1) + "/" + itoa(len(s.hits))
	}
	return countNoun(len(s.hits), "hit")
}

// view is the input line; the panel title carries the hit count.
func (s *spanSearch) view(w int) string { return clip(s.input.View(), w) }

// key edits the query; every change searches again and moves to the first
// hit after the cursor. enter keeps the hits, esc drops the search.
func (s *spanSearch) key(t *traceView, km tea.KeyMsg) {
	switch {
	case key.Matches(km, t.keys.Back):
		s.clear()
		return
	case km.Type == tea.KeyEnter:
		s.typing = false
		s.input.Blur()
		return
	}
	s.input, _ = s.input.Update(km)
	if v := strings.TrimSpace(s.input.Value()); v != s.query {
		s.query = v
		s.find(t)
		if len(s.hits) > 0 {
			t.cursor--
			t.step(s.hits, 1)
		}
	}
}

// find collects the hits of the query in t's rollout. The query is read
// as filter terms, each held by the span itself; a word is found in the
// span's name, ids, attribute keys and values or status message. A query
// that does not parse is searched for as text.
func (s *spanSearch) find(t *traceView) {
	s.hits, s.set, s.at, s.err = nil, nil, -1, ""
	if s.query == "" || t.r == nil {
		return
	}
	f, err := filter.Parse(s.query)
	if err != nil {
		var fe *filter.Error
		if errors.As(err, &fe) {
			s.err = fe.Reason
		} else {
			s.err = err.Error()
		}
		f = nil
	}
	in := t.snap.Interner()
	s.set = map[spanRef]bool{}
	for fi, fr := range t.r.Fragments {
		fragTrace := strings.ToLower(fr.TraceID.String())
		for i := range fr.Spans {
			sp := &fr.Spans[i]
			trace := fragTrace
			if tr := fr.Trace(i); tr != fr.TraceID {
				trace = strings.ToLower(tr.String())
			}
			word := func(w string) bool {
				has := func(x string) bool { return strings.Contains(strings.ToLower(x), w) }
				ok := strings.Contains(trace, w) || has(t.snap.Str(sp.Name)) || has(rollouts.DisplayName(in, sp)) || has(sp.SpanID.String())
				if !ok {
					sp.Attrs.Each(in, func(k string, v model.Value) bool {
						ok = has(k) || has(v.String())
						return !ok
					})
				}
				if !ok && sp.Extra != nil && sp.Extra.StatusMessage != "" {
					ok = has(sp.Extra.StatusMessage)
				}
				return ok
			}
			var ok bool
			if f != nil {
				ok = f.HitSpan(t.snap, fr.Trace(i), sp, word)
			} else {
				ok = word(strings.ToLower(s.query))
			}
			if ok {
				ref := spanRef{int32(fi), int32(i)}
				s.hits = append(s.hits, ref)
				s.set[ref] = true
			}
		}
	}
}
