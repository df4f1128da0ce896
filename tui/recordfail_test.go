package tui

import (
	"strings"
	"testing"
)

// TestHeaderShowsRecordFailure: spans the record file lost are the first
// thing the header's counts line says.
func TestHeaderShowsRecordFailure(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 3, false)
	b.st.CountNotRecorded(1234, "no space left on device")
	b.st.Sync()
	m := newTestModel(t, b, 100, 30, "all")
	line := strings.Split(m.View(), "\n")[1]
	if !strings.Contains(line, "record failed: no space left on device, 1234 spans not recorded") {
		t.Errorf("header line 2 does not show the record failure:\n%s", line)
	}
}
