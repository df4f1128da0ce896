package tui

import (
	"strings"
	"testing"
)

// chooseCut shows every id differently in the column: the start when it
// parts them, else the end, else both ends.
func TestChooseCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []string
		w    int
		want []string
	}{
		{"all fit", []string{"0-0", "12-0"}, 8, []string{"0-0", "12-0"}},
		{"starts differ", []string{"~61dad8c4/147c87eb", "~ab57abb8/a5f23271"}, 9, []string{"~61dad8c…", "~ab57abb…"}},
		{"one trace", []string{"~cfe1aa86/bbd9fd979d2f37d3", "~cfe1aa86/5edfbbbde5bde91e"}, 9, []string{"…9d2f37d3", "…e5bde91e"}},
		{"a few traces", []string{"~5fb5fde4/aaaa0001", "~5fb5fde4/bbbb0002", "~1394a1a4/cccc0001"}, 9, []string{"…aaaa0001", "…bbbb0002", "…cccc0001"}},
		{"only both ends", []string{"a1-mid-x1", "a1-mid-x2", "a2-mid-x1"}, 5, []string{"a1-…1", "a1-…2", "a2-…1"}},
		{"wide runes", []string{"ééééé1", "ééééé2"}, 4, []string{"…éé1", "…éé2"}},
		{"the same id twice", []string{"~aaaa/0001", "~aaaa/0001", "~aaaa/0002"}, 5, []string{"…0001", "…0001", "…0002"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := chooseCut(tc.ids, tc.w)
			var got []string
			for _, id := range tc.ids {
				s := c.apply(id, tc.w)
				if n := idWidth(s); n > tc.w {
					t.Errorf("apply(%q, %d) = %q, %d cells wide", id, tc.w, s, n)
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("chooseCut(%q, %d) shows %q, want %q", tc.ids, tc.w, got, tc.want)
			}
		})
	}
}
