package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/model"
)

// detailView shows every field of one span, scrollable.
type detailView struct {
	pager                  // lines: body wrapped to width
	body      []detailLine // unwrapped lines
	rolloutID string
}

// detailLine is a line of the detail: its lead (a field's padded name, an
// attribute's indent) and its value, which wraps under the value column
// (hang) so a long status message or attribute stays in line.
type detailLine struct {
	lead, value string
	hang        int
}

func newDetailView(st *Styles, keys *KeyMap) *detailView {
	return &detailView{pager: newPager(st, keys, "esc back")}
}

func (d *detailView) name() string        { return "span detail" }
func (d *detailView) opener() key.Binding { return d.keys.Detail }
func (d *detailView) setSize(w, h int)    { d.width, d.height = w, h; d.layout() }
func (d *detailView) refresh(e *env) {
	// A different rollout closes the detail: its span is no longer shown.
	if d.opened && (e.rollout == nil || e.rollout.ID != d.rolloutID) {
		d.opened = false
	}
}

// open shows the waterfall's cursor span.
func (d *detailView) open(e *env) bool {
	if !e.hasSpan || e.rollout == nil {
		return false
	}
	d.SetSpan(e.snap, e.rollout, e.frag, e.spanIdx, e.group)
	d.opened = true
	return true
}

// SetSpan fills the view with the span at f.Spans[i] of rollout r.
func (d *detailView) SetSpan(snap *model.Snapshot, r *model.Rollout, f *model.Fragment, i int, group string) {
	sp := &f.Spans[i]
	t := snap.Interner()
	d.title = "Span " + rollouts.DisplayName(snap.Interner(), sp)
	d.rolloutID = r.ID
	d.vp.GotoTop()
	var b []detailLine
	// keyW is the field column: values start after it, wrapped ones too.
	const keyW = 14
	add := func(k, v string) { b = append(b, detailLine{fmt.Sprintf("%-*s ", keyW, k), v, keyW + 1}) }
	put := func(text string) {
		v := strings.TrimLeft(text, " ")
		lead := text[:len(text)-len(v)]
		b = append(b, detailLine{lead, v, len(lead) + 2})
	}
	add("name", snap.Str(sp.Name))
	add("trace id", f.Trace(i).String())
	add("span id", sp.SpanID.String())
	parent := "none (root)"
	if up := f.ParentID(i); !up.IsZero() {
		parent = up.String()
		if sp.Parent >= 0 {
			parent += " (" + snap.Str(f.Spans[sp.Parent].Name) + ")"
		} else if f.Orphan() && i == 0 {
			parent += " (not arrived)"
		} else if f.Attached && i == 0 {
			parent += " (in another fragment)"
		}
	}
	add("parent id", parent)
	add("kind", sp.Kind.String())
	add("service", snap.ServiceName(sp.Resource))
	if group != "" {
		add("group", group)
	}
	add("start", time.Unix(0, sp.Start).UTC().Format("2006-01-02 15:04:05.000000Z"))
	add("end", time.Unix(0, sp.End).UTC().Format("2006-01-02 15:04:05.000000Z"))
	add("duration", fmtDur(sp.Duration())+fmt.Sprintf(" (at +%s in rollout %s)", fmtDur(sp.Start-r.Start), r.ID))
	status := sp.Status.String()
	if sp.Extra != nil && sp.Extra.StatusMessage != "" {
		status += ": " + sp.Extra.StatusMessage
	}
	add("status", status)
	var flags []string
	if sp.Flags()&model.FlagTruncated != 0 {
		flags = append(flags, "truncated (force-closed at shutdown)")
	}
	if sp.Flags()&model.FlagAttrsCapped != 0 {
		flags = append(flags, "attributes capped")
	}
	if sp.Extra != nil && sp.Extra.DroppedAttrs > 0 {
		flags = append(flags, fmt.Sprintf("%d attributes dropped", sp.Extra.DroppedAttrs))
	}
	if len(flags) > 0 {
		add("flags", strings.Join(flags, ", "))
	}
	if sp.WireSize() > 0 {
		add("wire size", fmtBytes(int64(sp.WireSize())))
	}
	attrs := func(indent string, a model.Attrs) {
		a.Each(t, func(k string, v model.Value) bool {
			put(indent + k + " = " + valueText(v))
			return true
		})
	}
	put("")
	put("attributes")
	if sp.Attrs.Empty() {
		put("  (none)")
	}
	attrs("  ", sp.Attrs)
	if sp.Extra != nil && len(sp.Extra.Events) > 0 {
		put("")
		put("events")
		for _, ev := range sp.Extra.Events {
			name := snap.Str(ev.Name)
			head := fmt.Sprintf("  +%s %s", fmtDur(ev.Time-sp.Start), name)
			if name == "exception" {
				typ, _ := ev.Attrs.Get(t, "exception.type")
				msg, _ := ev.Attrs.Get(t, "exception.message")
				head += ": " + typ.String() + ": " + msg.String()
			}
			put(head)
			ev.Attrs.Each(t, func(k string, v model.Value) bool {
				s := v.String()
				if k == "exception.stacktrace" {
					// Every line: the view scrolls.
					ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
					put("    " + k + ":")
					for _, l := range ls {
						put("      " + l)
					}
					return true
				}
				put("    " + k + " = " + s)
				return true
			})
		}
	}
	if sp.Extra != nil && len(sp.Extra.Links) > 0 {
		put("")
		put("links")
		for _, l := range sp.Extra.Links {
			put("  trace " + l.TraceID.String() + " span " + l.SpanID.String())
			attrs("    ", l.Attrs)
		}
	}
	put("")
	put("resource")
	attrs("  ", snap.Resource(sp.Resource).Attrs)
	d.body = b
	d.layout()
}

func (d *detailView) layout() {
	var lines []string
	for _, l := range d.body {
		if ansi.StringWidth(l.lead+l.value) <= d.width {
			lines = append(lines, l.lead+l.value)
			continue
		}
		for k, w := range wrap(l.value, max(d.width-l.hang, 8)) {
			if k == 0 {
				w = l.lead + w
			} else {
				w = strings.Repeat(" ", l.hang) + w
			}
			lines = append(lines, w)
		}
	}
	d.setLines(lines)
	d.resize(d.width, d.height)
}

// groupName is the registry name of a span's classified group, or "".
func groupName(reg *groups.Registry, g groups.Group, ok bool) string {
	if !ok {
		return ""
	}
	return reg.Name(g)
}

// valueText shows an attribute value in the detail panel: as typed, with
// the kinds text cannot tell apart from strings named.
func valueText(v model.Value) string {
	switch v.Kind {
	case model.ValEmpty:
		return "(empty value)"
	case model.ValBytes:
		return v.Str + " (bytes, base64)"
	}
	return v.String()
}
