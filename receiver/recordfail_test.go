package receiver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

// fullDisk returns a directory on a 256 KiB tmpfs when the test may mount
// one, else "".
func fullDisk(t *testing.T) string {
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		return ""
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Logf("no tmpfs (%v: %s): an injected writer returns ENOSPC instead", err, out)
		return ""
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// enospcFile passes writes to a real file until it holds max bytes, then
// fails them as a full disk does.
type enospcFile struct {
	f   *os.File
	max int64
	n   int64
}

func (w *enospcFile) Write(p []byte) (int, error) {
	room := w.max - w.n
	if int64(len(p)) <= room {
		n, err := w.f.Write(p)
		w.n += int64(n)
		return n, err
	}
	n, _ := w.f.Write(p[:max(room, 0)])
	w.n += int64(n)
	return n, &os.PathError{Op: "write", Path: w.f.Name(), Err: syscall.ENOSPC}
}

// TestRecordDiskFull fills the record's disk while spans keep coming: every
// request is still acknowledged and served from the live store, the failure
// is visible at once (server stats, the store snapshot) with its cause, and
// the spans not recorded are counted.
func TestRecordDiskFull(t *testing.T) {
	t.Run("tmpfs", func(t *testing.T) { testRecordDiskFull(t, true) })
	t.Run("injected", func(t *testing.T) { testRecordDiskFull(t, false) })
}

func testRecordDiskFull(t *testing.T, tmpfs bool) {
	cfg := Config{GRPCAddr: Off, HTTPAddr: "127.0.0.1:0"}
	var path string
	dir := ""
	if tmpfs {
		if dir = fullDisk(t); dir == "" {
			t.Skip("cannot mount a tmpfs here")
		}
	}
	if dir != "" {
		path = filepath.Join(dir, "rec.jsonl")
		cfg.RecordPath = path
	} else {
		path = filepath.Join(t.TempDir(), "rec.jsonl")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cfg.Record = &enospcFile{f: f, max: 256 << 10}
	}
	st := model.NewStore(model.Options{})
	defer st.Close()
	cfg.Store = st
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, addr := srv.Addrs()
	const per = 50
	sent := 0
	after := 0 // requests sent since the failure showed
	for i := 0; i < 2000 && after < 40; i++ {
		req := testRequest(per)
		for _, sp := range req.ResourceSpans[0].ScopeSpans[0].Spans {
			sp.TraceId[0], sp.TraceId[1] = byte(i), byte(i>>8)
		}
		code, body := postHTTP(t, addr, "/v1/traces", mediaProto, "", encodeRequest(t, req))
		if code != http.StatusOK {
			t.Fatalf("request %d answered %d (%s): a full record disk must not refuse spans the live store takes", i, code, body)
		}
		sent += per
		select {
		case <-srv.RecordFailed():
			after++
		default:
		}
	}
	if after == 0 {
		t.Fatalf("the record never failed after %d spans", sent)
	}
	ss := srv.Stats()
	if !errors.Is(ss.RecordError, syscall.ENOSPC) {
		t.Errorf("RecordError = %v, want no space left on device", ss.RecordError)
	}
	st.Sync()
	snap := st.Snapshot()
	if snap.Stats.Stored != sent {
		t.Errorf("live store holds %d spans, want all %d sent", snap.Stats.Stored, sent)
	}
	if snap.Stats.NotRecorded == 0 || snap.Stats.RecordError != "no space left on device" {
		t.Errorf("snapshot: %d not recorded, error %q; want some, \"no space left on device\"", snap.Stats.NotRecorded, snap.Stats.RecordError)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Shutdown = %v, want the record error", err)
	}
	ss = srv.Stats()
	if ss.UnwrittenSpans != 0 {
		t.Errorf("%d spans unaccounted for after Shutdown", ss.UnwrittenSpans)
	}
	// What the file holds plus what was counted lost covers every
	// acknowledged span (a line cut by the full disk counts as lost).
	rs := model.NewStore(model.Options{})
	defer rs.Close()
	rep, err := ReadFiles(rs, []string{path}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.BadLines > 1 {
		t.Errorf("%d bad lines in the record; at most the last may be cut", rep.BadLines)
	}
	if got := int64(rep.Spans) + ss.RecordLost; got < int64(sent) || rep.Spans > sent {
		t.Errorf("record %d + not recorded %d = %d, want >= %d acknowledged", rep.Spans, ss.RecordLost, got, sent)
	}
	t.Log(fmt.Sprintf("sent %d, recorded %d, not recorded %d", sent, rep.Spans, ss.RecordLost))
}
