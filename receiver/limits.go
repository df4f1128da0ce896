package receiver

import "github.com/nemo-gym/gymtrace/model"

// Default bounds for one span, used where a Limits field is zero.
const (
	DefaultMaxAttrs    = 128
	DefaultMaxValueLen = 4 << 10
	// DefaultMaxLine is the longest line a file reader accepts (256 MiB): a
	// longer line is reported as bad and skipped, so one runaway record
	// cannot take the whole file's memory. It is above the longest line the
	// recorder writes: a request within DefaultMaxDecompressed, and a
	// converted protobuf request is split into lines under it.
	DefaultMaxLine = 256 << 20
)

// Limits bounds what one span may carry; zero fields mean the defaults (128
// attrs, 4 KiB value). The bounds keep one misbehaving emitter from filling
// the store with huge payloads (prompts, stack traces) it never meant to ship.
type Limits struct {
	// MaxAttrs is the most attributes kept per span, event or link; the rest
	// are dropped and counted.
	MaxAttrs int
	// MaxValueLen is the longest string (or rendered array, map or bytes)
	// value kept, in bytes; longer values are cut at a UTF-8 boundary.
	MaxValueLen int
	// MaxEvents and MaxLinks are the most events and links kept per span;
	// the rest are dropped and counted.
	MaxEvents, MaxLinks int
	// MaxNameLen is the longest span, event or attribute key name kept, in
	// bytes; longer ones are cut and counted.
	MaxNameLen int
}

func (l Limits) norm() Limits {
	if l.MaxAttrs <= 0 {
		l.MaxAttrs = DefaultMaxAttrs
	}
	if l.MaxValueLen <= 0 {
		l.MaxValueLen = DefaultMaxValueLen
	}
	if l.MaxEvents <= 0 {
		l.MaxEvents = DefaultMaxEvents
	}
	if l.MaxLinks <= 0 {
		l.MaxLinks = DefaultMaxLinks
	}
	if l.MaxNameLen <= 0 {
		l.MaxNameLen = DefaultMaxNameLen
	}
	return l
}

// Report counts what a decode rejected or cut. Rejected spans are left out of
// the batch; the receiver answers them with an OTLP partial success.
type Report struct {
	// Rejected counts spans refused as invalid (bad id lengths).
	Rejected int
	// Reason is the first rejection's cause, one sentence, for partial_success.
	Reason string
	// AttrsDropped counts attributes dropped by Limits.MaxAttrs.
	AttrsDropped int
	// ValuesTruncated counts values cut by Limits.MaxValueLen.
	ValuesTruncated int
	// ValuesRepaired counts strings that were not valid UTF-8, kept with
	// U+FFFD in place of each bad sequence.
	ValuesRepaired int
	// EventsDropped, LinksDropped and NamesTruncated count what
	// Limits.MaxEvents, MaxLinks and MaxNameLen cut.
	EventsDropped, LinksDropped, NamesTruncated int
}

func (r *Report) reject(reason string) {
	if r.Rejected == 0 {
		r.Reason = reason
	}
	r.Rejected++
}

// Add accumulates o into r, keeping r's first reason.
func (r *Report) Add(o Report) {
	if r.Rejected == 0 && o.Rejected > 0 {
		r.Reason = o.Reason
	}
	r.Rejected += o.Rejected
	r.AttrsDropped += o.AttrsDropped
	r.ValuesTruncated += o.ValuesTruncated
	r.ValuesRepaired += o.ValuesRepaired
	r.EventsDropped += o.EventsDropped
	r.LinksDropped += o.LinksDropped
	r.NamesTruncated += o.NamesTruncated
}

// capped is what r counts of the bounds, as the store counts it.
func (r *Report) capped() model.Capped {
	return model.Capped{Attrs: int64(r.AttrsDropped), Values: int64(r.ValuesTruncated),
		Events: int64(r.EventsDropped), Links: int64(r.LinksDropped), Names: int64(r.NamesTruncated)}
}

// truncUTF8 returns the longest prefix of v of at most n bytes that does not
// split a UTF-8 sequence.
func truncUTF8(v []byte, n int) []byte {
	if len(v) <= n {
		return v
	}
	i := n
	// Step back over continuation bytes (10xxxxxx) to a rune start.
	for i > 0 && i > n-4 && v[i]&0xC0 == 0x80 {
		i--
	}
	if i > 0 && i > n-4 {
		return v[:i]
	}
	return v[:n]
}
