package tui

import (
	"github.com/charmbracelet/x/ansi"
)

// idCut is how an id too wide for its column is shown: its first head
// cells, "…", then its last cells up to the column's width. head is the
// width less one to keep the start, 0 to keep the end.
type idCut struct{ head int }

// apply shows id in w cells: whole when it fits, else cut.
func (c idCut) apply(id string, w int) string {
	n := idWidth(id)
	if n <= w {
		return id
	}
	head, tail := c.parts(id, n, w)
	return head + "…" + tail
}

// parts are the text kept before and after the "…" of id, n cells wide,
// cut to w cells.
func (c idCut) parts(id string, n, w int) (head, tail string) {
	h := min(c.head, w-1)
	t := w - 1 - h
	if n == len(id) { // plain ASCII: one byte a cell
		return id[:h], id[len(id)-t:]
	}
	return ansi.Truncate(id, h, ""), ansi.TruncateLeft(id, n-t, "")
}

// chooseCut picks the cut that shows every one of ids differently in w
// cells: the start when that tells them apart (so the list reads as the
// ids begin), else the end (a suffix, which path and diff accept as the
// id, and where random span ids differ when many rollouts share a trace),
// else a start and an end; failing all, the one telling most apart.
func chooseCut(ids []string, w int) idCut {
	if w < 2 {
		return idCut{}
	}
	// The start and the end first, each given up at its first two alike:
	// one trace shared by the run parts no start, at once.
	for _, c := range []idCut{{head: w - 1}, {head: 0}} {
		if n, _ := distinctCuts(ids, w, c, true); n == len(ids) {
			return c
		}
	}
	want, _ := distinctCuts(ids, 1<<30, idCut{}, false) // the same id twice reads alike however cut
	best, bestN := idCut{head: w - 1}, -1
	for k := 0; k < w; k++ {
		c := idCut{head: w - 1} // the start, the end, then both ends
		if k > 0 {
			c.head = (w - k) % (w - 1)
		}
		n, _ := distinctCuts(ids, w, c, false)
		if n == want {
			return c
		}
		if n > bestN {
			best, bestN = c, n
		}
	}
	return best
}

// distinctCuts counts the texts c shows ids as in w cells; with quit, it
// stops at the first two alike, and says so.
func distinctCuts(ids []string, w int, c idCut, quit bool) (int, bool) {
	type shown struct {
		head, tail string
		cut        bool
	}
	seen := make(map[shown]struct{}, len(ids))
	for _, id := range ids {
		k := shown{head: id}
		if n := idWidth(id); n > w {
			k.head, k.tail = c.parts(id, n, w)
			k.cut = true
		}
		if _, dup := seen[k]; dup && quit {
			return len(seen), true
		}
		seen[k] = struct{}{}
	}
	return len(seen), false
}
