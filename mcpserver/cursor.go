package mcpserver

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/model"
)

// sortVal is a rollout's value of a sort key: N for the counts and
// times, R for the reward (nil: none), S for the id.
type sortVal struct {
	N int64    `json:"n,omitempty"`
	R *float64 `json:"r,omitempty"`
	S string   `json:"s,omitempty"`
}

// sortKeyNames are list_rollouts' sort keys.
var sortKeyNames = []string{"duration", "errors", "id", "reward", "spans", "start", "traces"}

// valueOf is r's value of key, the reward read from ev.
func valueOf(key string, r *model.Rollout, ev *evidence.Joined) sortVal {
	switch key {
	case "start":
		return sortVal{N: r.Start}
	case "duration":
		return sortVal{N: r.End - r.Start}
	case "spans":
		return sortVal{N: int64(r.Spans)}
	case "errors":
		return sortVal{N: int64(r.Errors)}
	case "traces":
		return sortVal{N: int64(r.Traces)}
	case "id":
		return sortVal{S: r.ID}
	case "reward":
		return sortVal{R: reward(ev, r.ID)}
	}
	return sortVal{}
}

// ordered orders two values of key, downward when desc; a rollout
// without a reward sorts after every one with one either way up, so
// -reward lists the best first and the unknown last.
func ordered(key string, a, b sortVal, desc bool) int {
	if key == "reward" && (a.R == nil) != (b.R == nil) {
		if a.R == nil {
			return 1
		}
		return -1
	}
	c := cmpVals(key, a, b)
	if desc {
		c = -c
	}
	return c
}

// cmpVals orders two values of key, ascending.
func cmpVals(key string, a, b sortVal) int {
	switch key {
	case "id":
		return strings.Compare(a.S, b.S)
	case "reward":
		switch {
		case a.R == nil && b.R == nil:
			return 0
		case a.R == nil:
			return 1
		case b.R == nil:
			return -1
		case *a.R < *b.R:
			return -1
		case *a.R > *b.R:
			return 1
		}
		return 0
	}
	return cmpInt(a.N, b.N)
}

// listCursor is where a list_rollouts page ended: the offset in the
// snapshot it was read from, and the last row's rollout and sort value,
// so that a page read from a newer snapshot goes on after that row
// wherever rollouts that arrived meanwhile sort.
type listCursor struct {
	Seq    uint64  `json:"q"`
	Off    int     `json:"o"`
	Total  int     `json:"t"`
	ID     string  `json:"id"`
	Key    sortVal `json:"k"`
	Seen   int64   `json:"fs"` // the row's FirstSeen, its place in capture order
	Sort   string  `json:"s,omitempty"`
	Filter string  `json:"f,omitempty"`
}

const listCursorPrefix = "r:"

func (c listCursor) String() string {
	b, _ := json.Marshal(c)
	return listCursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// parseListCursor reads a list_rollouts cursor; a plain offset (o:N)
// is taken as one in the newest snapshot.
func parseListCursor(s string) (*listCursor, int, error) {
	var c listCursor
	if plain, n, err := decodeCursor(s, listCursorPrefix, &c); plain || err != nil {
		return nil, n, err
	}
	return &c, c.Off, nil
}

// cursorBody is what a cursor holds past its prefix.
type cursorBody interface{ offset() int }

func (c *listCursor) offset() int { return c.Off }
func (c *pageCursor) offset() int { return c.Off }

// decodeCursor reads s, a cursor this server gave with prefix, into c.
// An empty s or a plain offset (o:N) is plain, n that offset.
func decodeCursor(s, prefix string, c cursorBody) (plain bool, n int, err error) {
	if s == "" || strings.HasPrefix(s, "o:") {
		n, err := parseCursor(s)
		return true, n, err
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, prefix))
	if err != nil || !strings.HasPrefix(s, prefix) || json.Unmarshal(b, c) != nil || c.offset() < 0 {
		return false, 0, fmt.Errorf("cursor %q: not a next_cursor this server gave", s)
	}
	return false, c.offset(), nil
}

// resume is where the page after c starts in rolls, as sorted by key
// (desc: downward; sorted false: capture order) from snap seq. The same
// snapshot: c's offset. A newer one: the first row that sorts after c's
// last row as it sorted then (its value, then capture order), with a
// note that the listing changed.
func resume(c *listCursor, seq uint64, key string, desc, sorted bool, rolls []*model.Rollout, capture []*model.Rollout, ev *evidence.Joined) (int, []string) {
	if c.Seq == seq {
		return c.Off, nil
	}
	at := make(map[string]int, len(capture))
	for i, r := range capture {
		at[r.ID] = i
	}
	last, kept := at[c.ID]
	tieAfter := func(r *model.Rollout) bool {
		if kept {
			return at[r.ID] > last
		}
		return r.FirstSeen > c.Seen || r.FirstSeen == c.Seen && r.ID > c.ID
	}
	from := len(rolls)
	for i, r := range rolls {
		d := 0
		if sorted {
			d = ordered(key, valueOf(key, r, ev), c.Key, desc)
		}
		if d > 0 || d == 0 && tieAfter(r) {
			from = i
			break
		}
	}
	note := fmt.Sprintf("the store changed since the previous page (%d rollouts matched then, %d now): this page goes on after rollout %s as it sorted then; rollouts that arrived or moved ahead of it are not repeated (list from the start to see them)",
		c.Total, len(rolls), c.ID)
	if !kept {
		note += fmt.Sprintf("; rollout %s has left the store", c.ID)
	}
	return from, []string{note}
}

// pageCursor is where a page of get_rollout's tree or preview's
// per_rollout ended: the offset in the snapshot it was read from and the
// last item's key (a span id, a rollout id), so that a page read from a
// newer snapshot goes on after that item, wherever what arrived
// meanwhile sits.
type pageCursor struct {
	Seq   uint64 `json:"q"`
	Off   int    `json:"o"`
	Total int    `json:"t"`
	Key   string `json:"k"`
	// List names the list: "tree " and the rollout id, or "preview".
	List string `json:"l"`
}

const pageCursorPrefix = "c:"

func (c pageCursor) String() string {
	b, _ := json.Marshal(c)
	return pageCursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// parsePageCursor reads a cursor of list; a plain offset (o:N) is taken
// as one in the newest snapshot.
func parsePageCursor(s, list string) (*pageCursor, int, error) {
	var c pageCursor
	if plain, n, err := decodeCursor(s, pageCursorPrefix, &c); plain || err != nil {
		return nil, n, err
	}
	if c.List != list {
		return nil, 0, fmt.Errorf("cursor %q: a next_cursor of another list (%s), not of this one (%s)", s, c.List, list)
	}
	return &c, c.Off, nil
}

// resume is where the page after c starts among n items, key(i) the
// i-th's, read from snapshot seq: c's offset in the same snapshot; in a
// newer one, the item after c's last, with a note that the list changed.
func (c *pageCursor) resume(seq uint64, n int, key func(int) string, what string) (int, []string) {
	if c.Seq == seq {
		return c.Off, nil
	}
	for i := 0; i < n; i++ {
		if key(i) == c.Key {
			return i + 1, []string{fmt.Sprintf("the store changed since the previous page (%d %s then, %d now): this page goes on after %s; those that arrived ahead of it are not shown (read from the start to see them)",
				c.Total, what, n, c.Key)}
		}
	}
	from := min(c.Off, n)
	return from, []string{fmt.Sprintf("the store changed since the previous page (%d %s then, %d now) and %s has left it: this page goes on at the same offset", c.Total, what, n, c.Key)}
}

// keyedPage cuts n items to the page from from, as page does, its next
// cursor naming the last item's key.
func keyedPage(seq uint64, list string, n, from, limit int, key func(int) string, notes []string) (lo, hi int, p report.Page) {
	lo, hi, p = page(n, from, limit, notes)
	if p.Truncated && hi > 0 {
		p.NextCursor = pageCursor{Seq: seq, Off: hi, Total: n, Key: key(hi - 1), List: list}.String()
	}
	return lo, hi, p
}
