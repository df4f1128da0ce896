package receiver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

// A full disk is made three ways, the first that works here: a small tmpfs
// (as root), the same in a user namespace (unprivileged, where the kernel
// allows it: the test binary runs itself there), and else a file size
// limit (RLIMIT_FSIZE: writes past it fail as a full disk's do, with
// EFBIG), which any Linux process may set on itself.

// envTmpfsChild tells a re-run test binary that it is the user-namespace
// child that mounts the tmpfs.
const envTmpfsChild = "GYMTRACE_TEST_TMPFS_CHILD"

// smallTmpfs is a directory on a tmpfs of size bytes (as root), or "".
func smallTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return ""
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Logf("no tmpfs (%v: %s)", err, out)
		return ""
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// limitFileSize makes writes past n bytes in any file of this process fail
// (EFBIG) until the returned function lifts the limit.
func limitFileSize(t *testing.T, n uint64) (lift func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	lim := old
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	done := false
	lift = func() {
		if !done {
			done = true
			syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)
		}
	}
	t.Cleanup(lift)
	return lift
}

// TestRecordDiskFullThenFreed fills the record's disk while spans keep
// coming, then frees room: while full, requests are refused as retryable
// (503, nothing acknowledged that is not written), the failure is counted
// and shown (server stats, the store snapshot the TUI reads), the record
// stays whole, and once room returns recording resumes by itself. The
// record then holds exactly the acknowledged spans.
func TestRecordDiskFullThenFreed(t *testing.T) {
	t.Run("tmpfs", func(t *testing.T) {
		if os.Getenv(envTmpfsChild) != "" {
			// The user-namespace child: root here, so it may mount.
			testRecordDiskFull(t, "tmpfs")
			return
		}
		if os.Geteuid() == 0 {
			testRecordDiskFull(t, "tmpfs")
			return
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestRecordDiskFullThenFreed$/^tmpfs$", "-test.v")
		cmd.Env = append(os.Environ(), envTmpfsChild+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		}
		out, err := cmd.CombinedOutput()
		if err != nil && strings.Contains(err.Error(), "operation not permitted") {
			t.Skipf("no user namespaces here (%v): the fsize case covers it", err)
		}
		t.Logf("in a user namespace:\n%s", out)
		if err != nil {
			t.Fatalf("user-namespace run: %v", err)
		}
	})
	t.Run("fsize", func(t *testing.T) {
		if os.Getenv(envTmpfsChild) != "" {
			t.Skip("the parent runs it")
		}
		testRecordDiskFull(t, "fsize")
	})
}

func testRecordDiskFull(t *testing.T, how string) {
	const room = 256 << 10
	var dir string
	var free func()
	switch how {
	case "tmpfs":
		if dir = smallTmpfs(t, 2*room); dir == "" {
			t.Skip("cannot mount a tmpfs here")
		}
		// The filler leaves room for about 256 KiB of record.
		filler := filepath.Join(dir, "filler")
		if err := os.WriteFile(filler, make([]byte, room), 0o644); err != nil {
			t.Fatal(err)
		}
		free = func() {
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
		}
	case "fsize":
		dir = t.TempDir()
	}
	path := filepath.Join(dir, "rec.jsonl")
	srv, st := startServer(t, Config{GRPCAddr: Off, RecordPath: path}, model.Options{})
	if how == "fsize" {
		free = limitFileSize(t, room)
	}
	_, addr := srv.Addrs()
	const per = 50
	acked := map[uint64]bool{}
	next := uint64(0)
	send := func() (int, string) {
		req := testRequest(per)
		first := next
		for _, sp := range req.ResourceSpans[0].ScopeSpans[0].Spans {
			binary.BigEndian.PutUint64(sp.SpanId, next+1)
			binary.BigEndian.PutUint64(sp.TraceId[8:], next+1)
			next++
		}
		code, body := postHTTP(t, addr, "/v1/traces", mediaProto, "", encodeRequest(t, req))
		if code == http.StatusOK {
			for i := uint64(1); i <= per; i++ {
				acked[first+i] = true
			}
		}
		return code, string(body)
	}
	// Fill the disk.
	var code int
	var body string
	for i := 0; i < 2000; i++ {
		if code, body = send(); code != http.StatusOK {
			break
		}
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "record") {
		t.Fatalf("a full record disk answered %d %s; want 503 naming the record", code, body)
	}
	ss := srv.Stats()
	wantErr := syscall.ENOSPC
	if how == "fsize" {
		wantErr = syscall.EFBIG
	}
	if !ss.RecordFailing || !errors.Is(ss.RecordError, wantErr) || ss.RecordFailures == 0 || ss.RecordRefused == 0 {
		t.Errorf("stats while full: failing %v, error %v, %d failures, %d refused; want failing with %v", ss.RecordFailing, ss.RecordError, ss.RecordFailures, ss.RecordRefused, wantErr)
	}
	if ss.RequestsRefused[ReasonRecordFailed] == 0 {
		t.Errorf("requests refused %v: none counted as %s", ss.RequestsRefused, ReasonRecordFailed)
	}
	// Refused at once while the next try is not due: no conversion, no
	// write; still refused for the record.
	if code, body = send(); code != http.StatusServiceUnavailable {
		t.Errorf("second request on a full disk answered %d %s", code, body)
	}
	st.Sync()
	snap := st.Snapshot()
	if !snap.Stats.Record.Failing || snap.Stats.Record.Cause != wantErr.Error() || snap.Stats.Record.Refused == 0 {
		t.Errorf("snapshot record state %+v; want failing, %q, refused counted", snap.Stats.Record, wantErr.Error())
	}
	if snap.Stats.Stored != len(acked) {
		t.Errorf("live store holds %d spans, want the %d acknowledged: refused spans are sent again", snap.Stats.Stored, len(acked))
	}
	full := len(acked)

	free()
	// Recording resumes by itself once a try succeeds (at most a second
	// after the last failure).
	resumed := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if code, _ = send(); code == http.StatusOK {
			resumed = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !resumed {
		t.Fatalf("recording did not resume after room was freed: %+v", srv.Stats())
	}
	for i := 0; i < 10; i++ {
		if code, body = send(); code != http.StatusOK {
			t.Fatalf("after resuming, request answered %d %s", code, body)
		}
	}
	ss = srv.Stats()
	if ss.RecordFailing {
		t.Errorf("still failing after resuming: %+v", ss)
	}
	st.Sync()
	if s := st.Snapshot().Stats.Record; s.Failing || s.Failures == 0 {
		t.Errorf("snapshot record state after resuming %+v; want not failing, failures kept", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown after resuming = %v", err)
	}
	rs := model.NewStore(model.Options{})
	defer rs.Close()
	rep, err := ReadFiles(rs, []string{path}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.BadLines != 0 {
		t.Errorf("%d bad lines in the record %v: a failed write must be cut off again", rep.BadLines, rep.BadSamples)
	}
	rs.Sync()
	got := map[uint64]bool{}
	for _, r := range rs.Snapshot().Rollouts {
		for _, f := range r.Fragments {
			for _, sp := range f.Spans {
				got[binary.BigEndian.Uint64(sp.SpanID[:])] = true
			}
		}
	}
	missing, extra := 0, 0
	for id := range acked {
		if !got[id] {
			missing++
		}
	}
	for id := range got {
		if !acked[id] {
			extra++
		}
	}
	if missing > 0 || extra > 0 {
		t.Errorf("record holds %d spans: %d acknowledged missing, %d not acknowledged present", len(got), missing, extra)
	}
	t.Logf("%s: %d spans acknowledged before the disk filled, %d in all; %d failed writes, %d spans refused while full",
		how, full, len(acked), ss.RecordFailures, ss.RecordRefused)
}
