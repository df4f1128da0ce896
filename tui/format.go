package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// shortService strips the nemo-gym/ prefix every Gym service name carries.
func shortService(name string) string {
	if name == "" {
		return "?"
	}
	return strings.TrimPrefix(name, "nemo-gym/")
}

// fmtDur renders nanoseconds compactly: 420ns, 2.5µs, 850µs, 12.3ms, 4.21s, 3m05s.
func fmtDur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d <= 0:
		return "0"
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d)
	case d < 10*time.Microsecond:
		return trimZero(fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond))) + "µs"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d/time.Microsecond)
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	case d < time.Minute:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	m := int(d / time.Minute)
	s := int((d % time.Minute) / time.Second)
	return fmt.Sprintf("%dm%02ds", m, s)
}

// fmtCount renders a count with k/M suffixes past 10 000.
func fmtCount(n int64) string {
	switch {
	case n < 0:
		return "-" + fmtCount(-n)
	case n < 10_000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e3)) + "k"
	case n < 1_000_000_000:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e6)) + "M"
	}
	return trimZero(fmt.Sprintf("%.1f", float64(n)/1e9)) + "G"
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// fmtBytes renders a byte count in SI units.
func fmtBytes(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1_000_000_000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n < 1_000_000_000_000:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	}
	return fmt.Sprintf("%.1f TB", float64(n)/1e12)
}

// fmtRate renders a per-second rate.
func fmtRate(v float64) string {
	switch {
	case v <= 0:
		return "0"
	case v < 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmtCount(int64(v + 0.5))
}

// fit truncates s to width cells (with an ellipsis) and pads it to exactly width.
func fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	w := ansi.StringWidth(s)
	if w > width {
		s = ansi.Truncate(s, width, "…")
		w = ansi.StringWidth(s)
	}
	if w < width {
		s += strings.Repeat(" ", width-w)
	}
	return s
}

// fitRight right-aligns s in width cells.
func fitRight(s string, width int) string {
	w := ansi.StringWidth(s)
	if w > width {
		return ansi.Truncate(s, width, "…")
	}
	return strings.Repeat(" ", width-w) + s
}

// clip truncates s to width cells without padding.
func clip(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > width {
		return ansi.Truncate(s, width, "…")
	}
	return s
}

// wrap breaks text into lines of at most width cells at spaces.
func wrap(text string, width int) []string {
	if width < 8 {
		width = 8
	}
	var out []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			for ansi.StringWidth(word) > width {
				if line != "" {
					out = append(out, line)
					line = ""
				}
				out = append(out, ansi.Truncate(word, width, ""))
				word = ansi.Cut(word, width, ansi.StringWidth(word))
			}
			switch {
			case line == "":
				line = word
			case ansi.StringWidth(line)+1+ansi.StringWidth(word) <= width:
				line += " " + word
			default:
				out = append(out, line)
				line = word
			}
		}
		out = append(out, line)
	}
	return out
}

// window returns the first visible index so that cursor stays within a
// window of height rows, moving the previous offset as little as possible.
func window(cursor, offset, height, total int) int {
	if height <= 0 || total <= height {
		return 0
	}
	if cursor < offset {
		offset = cursor
	}
	if cursor >= offset+height {
		offset = cursor - height + 1
	}
	if offset > total-height {
		offset = total - height
	}
	if offset < 0 {
		offset = 0
	}
	return offset
}

// clamp bounds v to [lo, hi]; hi < lo yields lo.
func clamp(v, lo, hi int) int {
	if v > hi {
		v = hi
	}
	if v < lo {
		v = lo
	}
	return v
}

// padLines makes block exactly height lines (cutting or adding blank ones).
func padLines(lines []string, height int) string {
	if height <= 0 {
		return ""
	}
	if len(lines) > height {
		lines = lines[:height]
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

func itoa(n int) string { return strconv.Itoa(n) }

// countNoun is "1 span", "2 spans".
func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmtCount(int64(n)) + " " + noun + "s"
}

// titlePart is a part of a panel title and its rank: 0 is never left out,
// higher ranks give way first.
type titlePart struct {
	text string
	rank int
}

// fitTitle joins head and parts with " · " in width cells, leaving out
// whole parts, highest rank first, until the title fits; what still does
// not is cut.
func fitTitle(width int, head string, parts []titlePart) string {
	join := func(ps []titlePart) string {
		s := head
		for _, p := range ps {
			s += " · " + p.text
		}
		return s
	}
	ps := append([]titlePart(nil), parts...)
	for ansi.StringWidth(join(ps)) > width {
		worst := -1
		for i, p := range ps {
			if p.rank > 0 && (worst < 0 || p.rank >= ps[worst].rank) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		ps = append(ps[:worst], ps[worst+1:]...)
	}
	return clip(join(ps), width)
}
