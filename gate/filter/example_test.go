package filter_test

import (
	"fmt"

	"github.com/nemo-gym/gymtrace/gate/filter"
)

// Parse reads a filter as typed at the TUI's / or given to --filter; a
// term it cannot read is named with what was wrong.
func ExampleParse() {
	f, err := filter.Parse(`service=model dur>1s -status=error name="POST /run"`)
	fmt.Println(f, err)
	_, err = filter.Parse("dur>fast")
	fmt.Println(err)
	// Output:
	// service=model dur>1s -status=error name="POST /run" <nil>
	// filter term "dur>fast" (column 1): bad duration "fast" (want e.g. 100ms, 1.5s, 2m)
}
