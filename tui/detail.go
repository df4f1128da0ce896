package tui

import (
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate"
	"github.com/nemo-gym/gymtrace/model"
)

// detailView shows every field of one span, scrollable.
type detailView struct {
	pager          // lines: body wrapped to width
	body  []string // unwrapped lines
}

func newDetailView(st *Styles, keys *KeyMap) detailView {
	return detailView{pager: pager{st: st, keys: keys, hint: "esc back"}}
}

// SetSpan fills the view with the span at f.Spans[i] of rollout r.
func (d detailView) SetSpan(snap *model.Snapshot, r *model.Rollout, f *model.Fragment, i int, group string) detailView {
	sp := &f.Spans[i]
	t := snap.Interner()
	d.title = "Span " + snap.Str(sp.Name)
	d.offset = 0
	var b []string
	add := func(k, v string) { b = append(b, fmt.Sprintf("%-14s %s", k, v)) }
	add("name", snap.Str(sp.Name))
	add("trace id", sp.TraceID.String())
	add("span id", sp.SpanID.String())
	parent := "none (root)"
	if !sp.ParentID.IsZero() {
		parent = sp.ParentID.String()
		if sp.Parent >= 0 {
			parent += " (" + snap.Str(f.Spans[sp.Parent].Name) + ")"
		} else if f.Orphan() && i == 0 {
			parent += " (not arrived)"
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
	if sp.Flags&model.FlagTruncated != 0 {
		flags = append(flags, "truncated (force-closed at shutdown)")
	}
	if sp.Flags&model.FlagAttrsCapped != 0 {
		flags = append(flags, "attributes capped")
	}
	if sp.Extra != nil && sp.Extra.DroppedAttrs > 0 {
		flags = append(flags, fmt.Sprintf("%d attributes dropped", sp.Extra.DroppedAttrs))
	}
	if len(flags) > 0 {
		add("flags", strings.Join(flags, ", "))
	}
	if sp.WireSize > 0 {
		add("wire size", fmtBytes(int64(sp.WireSize)))
	}
	attrs := func(indent string, a model.Attrs) {
		a.Each(t, func(k string, v model.Value) bool {
			b = append(b, indent+k+" = "+v.String())
			return true
		})
	}
	b = append(b, "", "attributes")
	if sp.Attrs == "" {
		b = append(b, "  (none)")
	}
	attrs("  ", sp.Attrs)
	if sp.Extra != nil && len(sp.Extra.Events) > 0 {
		b = append(b, "", "events")
		for _, ev := range sp.Extra.Events {
			name := snap.Str(ev.Name)
			head := fmt.Sprintf("  +%s %s", fmtDur(ev.Time-sp.Start), name)
			if name == "exception" {
				typ, _ := ev.Attrs.Get(t, "exception.type")
				msg, _ := ev.Attrs.Get(t, "exception.message")
				head += ": " + typ.String() + ": " + msg.String()
			}
			b = append(b, head)
			ev.Attrs.Each(t, func(k string, v model.Value) bool {
				s := v.String()
				if k == "exception.stacktrace" {
					ls := strings.Split(strings.TrimSpace(s), "\n")
					if len(ls) > 4 {
						ls = append(ls[:1], append([]string{"…"}, ls[len(ls)-3:]...)...)
					}
					b = append(b, "    "+k+":")
					for _, l := range ls {
						b = append(b, "      "+l)
					}
					return true
				}
				b = append(b, "    "+k+" = "+s)
				return true
			})
		}
	}
	if sp.Extra != nil && len(sp.Extra.Links) > 0 {
		b = append(b, "", "links")
		for _, l := range sp.Extra.Links {
			b = append(b, "  trace "+l.TraceID.String()+" span "+l.SpanID.String())
			attrs("    ", l.Attrs)
		}
	}
	b = append(b, "", "resource")
	attrs("  ", snap.Resource(sp.Resource).Attrs)
	d.body = b
	d.layout()
	return d
}

// SetSize sets the content size.
func (d detailView) SetSize(w, h int) detailView {
	d.width, d.height = w, h
	d.layout()
	return d
}

func (d *detailView) layout() {
	d.lines = d.lines[:0]
	for _, l := range d.body {
		if l == "" {
			d.lines = append(d.lines, "")
			continue
		}
		if ansi.StringWidth(l) <= d.width {
			d.lines = append(d.lines, l)
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		for k, w := range wrap(l, max(d.width-indent-2, 8)) {
			if k > 0 {
				w = strings.Repeat(" ", indent+2) + w
			} else {
				w = strings.Repeat(" ", indent) + w
			}
			d.lines = append(d.lines, w)
		}
	}
	d.render()
}

// Update scrolls.
func (d detailView) Update(msg tea.Msg) (detailView, tea.Cmd) {
	d.scroll(msg)
	return d, nil
}

// Scroll moves the view by n lines.
func (d detailView) Scroll(n int) detailView {
	d.offset += n
	d.render()
	return d
}

// groupName is the registry name of a span's classified group, or "".
func groupName(reg *gate.Registry, g gate.Group, ok bool) string {
	if !ok {
		return ""
	}
	return reg.Name(g)
}
