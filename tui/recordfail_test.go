package tui

import (
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

// TestHeaderShowsRecordFailure: a failing record (a full disk) is the first
// thing the header's counts line says, with what it refused; once it
// writes again the header keeps what happened.
func TestHeaderShowsRecordFailure(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 3, false)
	b.st.SetRecordState(model.RecordState{Refused: 1234, Failures: 3, Failing: true, Cause: "no space left on device"})
	b.st.Sync()
	m := newTestModel(t, b, 100, 30, "all")
	line := strings.Split(m.View(), "\n")[1]
	if !strings.HasPrefix(strings.TrimSpace(line), "record failing: no space left on device, 1234 spans refused (senders retry)") {
		t.Errorf("header line 2 does not start with the record failure:\n%s", line)
	}
	b.st.SetRecordState(model.RecordState{Refused: 1234, Failures: 3, Cause: "no space left on device"})
	b.st.Sync()
	m = newTestModel(t, b, 140, 30, "all")
	line = strings.Split(m.View(), "\n")[1]
	if !strings.Contains(line, "record: 1234 spans refused, 3 failed writes (last: no space left on device)") {
		t.Errorf("header line 2 does not keep the record's past failure:\n%s", line)
	}
}
