package tui_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTmuxHangupEnds closes the terminal of a live TUI (tmux kill-session
// sends SIGHUP, as a dropped SSH session does): demo and serve must exit,
// freeing their ports and closing --record, instead of running on unseen.
func TestTmuxHangupEnds(t *testing.T) {
	bin := tmuxBinary(t)
	for _, tc := range []struct{ name, args, ready string }{
		// A fleet that keeps sending: the live rate is never 0 while it does.
		{"demo", "demo --grpc-addr 127.0.0.1:0 --http-addr 127.0.0.1:0 --rollouts 0 --rate 20 --latency 1ms --batch-timeout 100ms", `live [1-9][\d.k]* spans/s[\s\S]*Rollouts [1-9]`},
		{"serve", "serve --grpc-addr 127.0.0.1:0 --http-addr 127.0.0.1:0", `gymtrace serve`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rec := filepath.Join(dir, "rec.jsonl")
			// exec: the pane's process is gymtrace itself, and its pid is known.
			s := startTmux(t, dir, "sh -c 'echo $$ > pid; exec "+bin+" "+tc.args+" --record "+rec+"'", 120, 40)
			s.waitFor("the live screen", regexp.MustCompile(tc.ready))
			raw, err := os.ReadFile(filepath.Join(dir, "pid"))
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
			if err != nil {
				t.Fatal(err)
			}
			s.tmux("kill-session", "-t", "gt")
			deadline := time.Now().Add(15 * time.Second)
			for syscall.Kill(pid, 0) == nil {
				if time.Now().After(deadline) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("%s still runs 15 s after its terminal closed (SIGHUP)", tc.name)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Gone, and the record is complete: it no longer grows.
			a, err := os.Stat(rec)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			if b, _ := os.Stat(rec); b.Size() != a.Size() {
				t.Errorf("--record grows after exit: %d → %d bytes", a.Size(), b.Size())
			}
		})
	}
}
