package receiver

import "github.com/nemo-gym/gymtrace/model"

// Default bounds on a span's events, links and names, used where a Limits
// field is zero. A span may carry a million events within one request; the
// store keeps the first ones, like the SDKs' own span limits (128).
const (
	DefaultMaxEvents  = 128
	DefaultMaxLinks   = 128
	DefaultMaxNameLen = 1 << 10
)

// name interns a span, event or attribute key name, cut at the name length
// bound (names are interned, so a long unique one would stay for good).
func (d *decoder) name(b []byte) model.Str {
	if len(b) > d.lim.MaxNameLen {
		b = truncUTF8(b, d.lim.MaxNameLen)
		d.rep.NamesTruncated++
	}
	return d.l.Intern(b)
}

// keepEvent appends ev to x unless the span is at the event bound, in which
// case it is counted and the span marked.
func (d *decoder) keepEvent(x *model.Extra, sp *model.Span, ev model.Event) {
	if len(x.Events) >= d.lim.MaxEvents {
		d.rep.EventsDropped++
		sp.SetFlags(model.FlagAttrsCapped)
		return
	}
	x.Events = append(x.Events, ev)
}

// keepLink is keepEvent for links.
func (d *decoder) keepLink(x *model.Extra, sp *model.Span, ln model.Link) {
	if len(x.Links) >= d.lim.MaxLinks {
		d.rep.LinksDropped++
		sp.SetFlags(model.FlagAttrsCapped)
		return
	}
	x.Links = append(x.Links, ln)
}
