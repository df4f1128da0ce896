package tui

import "testing"

func TestListCursor(t *testing.T) {
	k := DefaultKeyMap()
	tests := []struct {
		name     string
		at, n    int
		key      string
		want     int
		consumed bool
	}{
		{"down", 0, 5, "down", 1, true},
		{"down at the end stays", 4, 5, "j", 4, true},
		{"up at the top stays", 0, 5, "up", 0, true},
		{"bottom", 1, 5, "G", 4, true},
		{"top", 3, 5, "g", 0, true},
		{"page down clamps", 1, 5, "pgdown", 4, true},
		{"no rows", 0, 0, "down", 0, true},
		{"not a move", 2, 5, "x", 2, false},
	}
	for _, tt := range tests {
		c := listCursor{cursor: tt.at}
		ok := c.moveKey(k, keyMsg(tt.key), tt.n, 3)
		if ok != tt.consumed || c.cursor != tt.want {
			t.Errorf("%s: moveKey(%q) from %d over %d = %d (%v), want %d (%v)", tt.name, tt.key, tt.at, tt.n, c.cursor, ok, tt.want, tt.consumed)
		}
	}
	c := listCursor{cursor: 9}
	if top := c.follow(4, 20); top != 6 {
		t.Errorf("follow: first row %d, want 6 (cursor 9 at the bottom of 4)", top)
	}
	for _, tc := range []struct{ y, want int }{{1, -1}, {2, 6}, {5, 9}, {20, -1}} {
		if got := c.rowAt(tc.y, 2, 12); got != tc.want {
			t.Errorf("rowAt(%d) = %d, want %d", tc.y, got, tc.want)
		}
	}
}
