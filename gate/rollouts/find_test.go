package rollouts

import (
	"errors"
	"reflect"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

func TestLookup(t *testing.T) {
	var rs []*model.Rollout
	for _, id := range []string{"3-0", "13-0", "3-1", "~cb96ed7b/08c4d535f0104882", "~cb96ed7b/15f2b29986079436", "~5046471f/22a27014e81cabae"} {
		rs = append(rs, &model.Rollout{ID: id, Synthetic: id[0] == '~'})
	}
	for _, tc := range []struct {
		id, want string
		matches  []string
		nearest  []string
	}{
		{id: "3-0", want: "3-0"}, // whole id, though also a suffix of 13-0
		{id: "13", want: "13-0"}, // prefix
		{id: "-1", want: "3-1"},  // suffix
		{id: "f0104882", want: "~cb96ed7b/08c4d535f0104882"},
		{id: "~5046", want: "~5046471f/22a27014e81cabae"},
		{id: "5046471f", want: "~5046471f/22a27014e81cabae"}, // without its ~
		{id: "~cb96ed7b/", matches: []string{"~cb96ed7b/08c4d535f0104882", "~cb96ed7b/15f2b29986079436"}},
		{id: "3", matches: []string{"3-0", "3-1"}},
		{id: "-0", matches: []string{"13-0", "3-0"}},
		{id: "4-0", nearest: []string{"3-0", "13-0", "3-1"}},
		{id: "", nearest: nil},
	} {
		r, err := Lookup(rs, tc.id)
		if tc.want != "" {
			if err != nil || r.ID != tc.want {
				t.Errorf("Lookup(%q) = %v, %v; want %s", tc.id, r, err, tc.want)
			}
			continue
		}
		var le *LookupError
		if !errors.As(err, &le) || !reflect.DeepEqual(le.Matches, tc.matches) || !reflect.DeepEqual(le.Nearest, tc.nearest) {
			t.Errorf("Lookup(%q) = %v, %v; want matches %q nearest %q", tc.id, r, err, tc.matches, tc.nearest)
		}
	}
	_, err := Lookup(rs, "3")
	if got, want := err.Error(), `"3" names 2 rollouts: 3-0, 3-1 (give more of the id)`; got != want {
		t.Errorf("ambiguous: %q, want %q", got, want)
	}
	_, err = Lookup(rs, "4-0")
	if got, want := err.Error(), `"4-0": no such rollout among 6; nearest 3-0, 13-0, 3-1`; got != want {
		t.Errorf("none: %q, want %q", got, want)
	}
	if _, err := Lookup(nil, "3-0"); err == nil || err.Error() != `"3-0": no such rollout, the capture holds none` {
		t.Errorf("empty: %v", err)
	}
}
