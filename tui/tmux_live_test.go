package tui_test

import (
	"bytes"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/internal/testfile"
)

var (
	headerRollouts = regexp.MustCompile(`rollouts (\d+)`)
	listRollouts   = regexp.MustCompile(`Rollouts (\d+)`)
	verdictTotal   = regexp.MustCompile(`joining\s+[✓✗] (?:intact )?\d+/(\d+)`)
	headerSpans    = regexp.MustCompile(`spans (\d+) ·`)
)

// faces reads the rollout count of the header, the list's title and the
// joining verdict off a screen; ok is false while one is not shown.
func faces(scr string) (spans int, counts [3]int, ok bool) {
	for i, re := range []*regexp.Regexp{headerRollouts, listRollouts, verdictTotal} {
		m := re.FindStringSubmatch(scr)
		if m == nil {
			return 0, counts, false
		}
		counts[i], _ = strconv.Atoi(m[1])
	}
	m := headerSpans.FindStringSubmatch(scr)
	if m == nil {
		return 0, counts, false
	}
	spans, _ = strconv.Atoi(m[1])
	return spans, counts, true
}

// TestTmuxLiveFacesAgree replays a real Gym OTLP capture into serve's TUI in
// batches, the driver's last as in real runs. After each batch, once its
// spans are in, the header, the rollout list and the joining verdict count
// the same rollouts; before the driver's spans they are all in flight, and
// at the end there are as many as the run had.
func TestTmuxLiveFacesAgree(t *testing.T) {
	bin := tmuxBinary(t)
	capture := filepath.Join("..", "testdata", "real-gym", "s41-obs0-iso", "all-otlp")
	early, late, _ := testfile.EarlyLate(t, filepath.Join(capture, "otlp", "traces.jsonl.gz"), "nemo-gym/orchestrator", 64)
	s := startTmux(t, t.TempDir(), bin+" serve --grpc-addr off --http-addr 127.0.0.1:0 --spec all", 200, 50)
	scr := s.waitFor("the receiver's address", regexp.MustCompile(`http 127\.0\.0\.1:\d+`))
	addr := regexp.MustCompile(`http (127\.0\.0\.1:\d+)`).FindStringSubmatch(scr)[1]
	sent := 0
	send := func(reqs [][]byte) {
		for _, b := range reqs {
			resp, err := http.Post("http://"+addr+"/v1/traces", "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST: %s", resp.Status)
			}
			sent += bytes.Count(b, []byte(`"spanId"`))
		}
	}
	// agree waits until the screen shows every span sent and its three
	// faces one count, and returns it.
	agree := func(step string) (int, string) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			scr := s.screen()
			spans, c, ok := faces(scr)
			if ok && spans == sent && c[0] == c[1] && c[1] == c[2] {
				return c[0], scr
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d spans sent; header, list and verdict never agreed (%v, spans %d):\n%s", step, sent, c, spans, scr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	quarter := (len(early) + 3) / 4
	for i := 0; i < len(early); i += quarter {
		send(early[i:min(i+quarter, len(early))])
		n, scr := agree("agent, model and resources batch " + strconv.Itoa(i/quarter+1))
		if n > 20 {
			t.Errorf("%d rollouts before the driver's spans, more than the run's 20:\n%s", n, scr)
		}
	}
	if n, scr := agree("before the driver"); n != 20 || !regexp.MustCompile(`20 in flight`).MatchString(scr) {
		t.Errorf("before the driver's spans: %d rollouts, want the run's 20, all in flight:\n%s", n, scr)
	}
	send(late)
	if n, scr := agree("after the driver"); n != 20 || regexp.MustCompile(`in flight`).MatchString(scr) {
		t.Errorf("after the driver's spans: %d rollouts, want 20, none in flight:\n%s", n, scr)
	}
	s.waitFor("the run's end", regexp.MustCompile(`run ended`))
	s.keys("q")
}
