package tui_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tmuxSession drives the real gymtrace binary in a detached tmux session,
// the way a user at a terminal would.
type tmuxSession struct {
	t      *testing.T
	socket string
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (s *tmuxSession) screen() string { return s.tmux("capture-pane", "-p", "-t", "gt") }

// keys sends tmux key names one at a time.
func (s *tmuxSession) keys(ks ...string) {
	s.t.Helper()
	for _, k := range ks {
		s.tmux("send-keys", "-t", "gt", k)
	}
}

// waitFor polls the screen until re matches, failing after a timeout.
func (s *tmuxSession) waitFor(what string, re *regexp.Regexp) string {
	s.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		scr := s.screen()
		if re.MatchString(scr) {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("waiting for %s (%s); screen:\n%s", what, re, scr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gymtrace")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/nemo-gym/gymtrace/cmd/gymtrace")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// tmuxBinary skips the test without tmux, else builds the binary it drives.
func tmuxBinary(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed; install it to run the end-to-end terminal test")
	}
	return buildBinary(t)
}

func startTmux(t *testing.T, dir, command string, w, h int) *tmuxSession {
	t.Helper()
	s := &tmuxSession{t: t, socket: fmt.Sprintf("gymtrace-test-%d", os.Getpid())}
	s.tmux("new-session", "-d", "-s", "gt", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "-c", dir,
		command+"; echo GYMTRACE-EXITED; sleep 600")
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", s.socket, "kill-server").Run() })
	return s
}

// TestTmuxOpen opens a capture taken with span_groups "all", picks a rollout,
// previews job off, then per_rollout with http_client off, copies the spec
// and quits.
func TestTmuxOpen(t *testing.T) {
	bin := tmuxBinary(t)
	dir := t.TempDir()
	copyCapture(t, dir, "all.console.jsonl")
	s := startTmux(t, dir, bin+" open --spec all all.console.jsonl", 120, 40)

	s.waitFor("the rollout list", regexp.MustCompile(`Rollouts 6 `))
	// The capture names no known Gym version: the newest variant is assumed.
	s.waitFor("the variant", regexp.MustCompile(`Gym G3\b`))
	s.waitFor("the join check", regexp.MustCompile(`✓ joined`))
	s.keys("j")
	s.waitFor("the second rollout's trace", regexp.MustCompile(`Trace s3-r\d{4} · \d+ spans`))

	// job off: the run's single trace becomes one trace per rollout.
	s.keys("Tab", "Tab", "Space")
	s.waitFor("job unchecked", regexp.MustCompile(`\[ \] job\*`))
	s.waitFor("traces 1 → 6", regexp.MustCompile(`traces sent\s+1\s+6\s`))

	// per_rollout, then http_client off: the join breaks, and why.
	s.keys("2")
	s.waitFor("per_rollout previewed", regexp.MustCompile(`preview per_rollout`))
	s.keys("j", "j", "Space")
	s.waitFor("http_client unchecked", regexp.MustCompile(`\[ \] http_client\*`))
	s.waitFor("the split", regexp.MustCompile(`✗ 6/6 split`))
	scr := s.waitFor("the broken hop", regexp.MustCompile(`✗ preview: \S+ → \S+`))
	if !strings.Contains(scr, "http_client off") {
		t.Errorf("the broken hop does not say why:\n%s", scr)
	}

	// tmux's default (external) drops a program's OSC 52, and the status
	// says so; with set-clipboard on the snippet lands in tmux's buffer.
	s.tmux("set-option", "-g", "set-clipboard", "external")
	s.keys("y")
	snippet := filepath.Join(dir, "gymtrace-span-groups.yaml")
	// The spec splits every rollout: copied, but said first.
	s.waitFor("the copy status", regexp.MustCompile(`(?m)^✗ this spec splits 6 of 6 rollouts · clipboard not set \(tmux set-clipboard external; set it on\) · wrote gymtrace-span-g`))
	s.tmux("set-option", "-g", "set-clipboard", "on")
	s.keys("y")
	s.waitFor("the clipboard status", regexp.MustCompile(`(?m)^✗ this spec splits 6 of 6 rollouts · copied: sent to tmux and the terminal clipboard · `))
	if buf := s.tmux("show-buffer"); !strings.Contains(buf, "NEMO_GYM_OTEL_SPAN_GROUPS=") {
		t.Errorf("tmux's buffer after y:\n%s", buf)
	}
	body, err := os.ReadFile(snippet)
	if err != nil {
		t.Fatalf("snippet file: %v", err)
	}
	const spec = "server,rollout,agent,model_call,verify" // G3's per_rollout, http_client off
	if !strings.Contains(string(body), `span_groups: "`+spec+`"`) {
		t.Errorf("snippet file:\n%s\nwant span_groups %q", body, spec)
	}
	const warn = "# warning: this spec splits 6 of 6 rollouts: the spec lacks http_client"
	if !strings.HasPrefix(string(body), warn) {
		t.Errorf("snippet file:\n%s\nwant it to start with %q", body, warn)
	}

	s.keys("q")
	scr = s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
	for _, want := range []string{warn, "telemetry:", `span_groups: "` + spec + `"`, "NEMO_GYM_OTEL_SPAN_GROUPS=" + spec} {
		if !strings.Contains(scr, want) {
			t.Errorf("after quitting the screen lacks %q:\n%s", want, scr)
		}
	}
}

// TestTmuxDemo is a newcomer's first run: `gymtrace demo`, a rollout picked,
// job toggled off (traces per rollout change), per_rollout with http_client
// off (the join break reported), the spec copied out.
func TestTmuxDemo(t *testing.T) {
	bin := tmuxBinary(t)
	dir := t.TempDir()
	// One collection run of 8 rollouts, fast, on free ports.
	s := startTmux(t, dir, bin+" demo --grpc-addr 127.0.0.1:0 --http-addr 127.0.0.1:0 --rollouts 8 --run-size 8"+
		" --rate 0 --latency 2ms --batch-timeout 100ms", 120, 40)

	s.waitFor("the fleet's rollouts", regexp.MustCompile(`Rollouts 8 `))
	// The run's gym.job span ends last; once it is in, the run is one
	// trace beside the three servers' health probes.
	s.waitFor("the whole run in one trace", regexp.MustCompile(`traces sent\s+4\s+4\s`))
	// From the top: the run-level rows (listed after the rollouts) may
	// still be arriving and take the cursor.
	s.keys("g", "j", "j")
	s.waitFor("the third rollout's trace", regexp.MustCompile(`Trace (~[0-9a-f]{8}/[0-9a-f]{16}|\d+-\d+) · \d+ spans · 1 trace`))

	s.keys("Tab", "Tab", "Space")
	s.waitFor("job unchecked", regexp.MustCompile(`\[ \] job\*`))
	// A trace per rollout, the probes, and /aggregate_metrics.
	s.waitFor("traces 4 → 12", regexp.MustCompile(`traces sent\s+4\s+12\s`))

	s.keys("2")
	s.waitFor("per_rollout previewed", regexp.MustCompile(`preview per_rollout\s`))
	s.keys("j", "j", "Space")
	s.waitFor("http_client unchecked", regexp.MustCompile(`\[ \] http_client\*`))
	scr := s.waitFor("the split", regexp.MustCompile(`✗ 8/8 split`))
	if !strings.Contains(scr, "http_client off") {
		t.Errorf("the broken hop does not say why:\n%s", scr)
	}

	s.keys("y")
	s.waitFor("the copy status", regexp.MustCompile(`✗ this spec splits 8 of 8 rollouts · (copied: sent to tmux|clipboard not set \(tmux).* · wrote gymtrace-span-g`))
	const spec = "server,rollout,agent,model_call,verify" // G1's per_rollout (the demo fleet's variant), http_client off
	body, err := os.ReadFile(filepath.Join(dir, "gymtrace-span-groups.yaml"))
	if err != nil || !strings.Contains(string(body), `span_groups: "`+spec+`"`) {
		t.Fatalf("snippet file (err %v):\n%s\nwant span_groups %q", err, body, spec)
	}
	s.keys("q")
	scr = s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
	if !strings.Contains(scr, "NEMO_GYM_OTEL_SPAN_GROUPS="+spec) {
		t.Errorf("after quitting the screen lacks the env line:\n%s", scr)
	}
}

// typeText sends literal text.
func (s *tmuxSession) typeText(text string) {
	s.t.Helper()
	s.tmux("send-keys", "-t", "gt", "-l", text)
}

func copyCapture(t *testing.T, dir, name string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "captures", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTmuxFindAndFailures is a Jaeger user's round: under NO_COLOR at 120×40
// failed spans carry a mark, / in the waterfall searches spans and n steps,
// f jumps to a failure, a trace id pasted in the rollout filter selects its
// rollout, and help tells how to leave.
func TestTmuxFindAndFailures(t *testing.T) {
	bin := tmuxBinary(t)
	dir := t.TempDir()
	copyCapture(t, dir, "per_rollout.console.jsonl")
	s := startTmux(t, dir, "NO_COLOR=1 "+bin+" open per_rollout.console.jsonl", 120, 40)
	s.waitFor("the rollout list", regexp.MustCompile(`Rollouts 6 `))
	if scr := s.screen(); strings.Contains(scr, "\x1b[") {
		t.Errorf("escape codes under NO_COLOR")
	}
	s.keys("Tab")
	// The first rollout fails: its failed spans are marked before the name.
	scr := s.waitFor("a failed span's mark", regexp.MustCompile(`┃[› ]!\S`))
	if !regexp.MustCompile(`┃[› ]!HTTP POST`).MatchString(scr) {
		t.Errorf("the failed root span has no mark:\n%s", scr)
	}

	s.keys("/")
	s.waitFor("the span search", regexp.MustCompile(`search spans: `))
	s.typeText("seed_session")
	s.keys("Enter")
	scr = s.waitFor("the first hit", regexp.MustCompile(`/seed_session 1/(\d+)`))
	n := regexp.MustCompile(`/seed_session 1/(\d+)`).FindStringSubmatch(scr)[1]
	if n == "1" {
		t.Fatalf("one hit only; the test needs two:\n%s", scr)
	}
	row := func(scr string) string { return regexp.MustCompile(`┃›[^\n]*`).FindString(scr) }
	first := row(scr)
	s.keys("n")
	scr = s.waitFor("the second hit", regexp.MustCompile(`/seed_session 2/`+n))
	if row(scr) == first || !strings.Contains(row(scr), "seed_session") {
		t.Errorf("n did not move to another hit: %q then %q", first, row(scr))
	}
	// A key right after Escape would read as alt+key: wait for it to act.
	s.keys("Escape")
	s.waitFor("the search cleared", regexp.MustCompile(`Trace s3-r\d{4} · \d+ spans · 1 trace · [\d.]+\w+( · tokens \d+ in / \d+ out)?\s+┃`))
	// The search reads filter terms on each span, as the rollout filter does.
	s.keys("/")
	s.typeText("status=error")
	s.keys("Enter")
	s.waitFor("the error spans found by status=error", regexp.MustCompile(`/status=error \d+/\d+[\s\S]*┃›!`))
	s.keys("Escape")
	s.waitFor("the search cleared", regexp.MustCompile(`Trace s3-r\d{4} · \d+ spans · 1 trace · [\d.]+\w+( · tokens \d+ in / \d+ out)?\s+┃`))
	s.keys("g", "j", "f")
	scr = s.waitFor("a failed span under the cursor", regexp.MustCompile(`┃›!`))

	// A trace id pasted in the rollout filter.
	s.keys("BTab")
	s.keys("/")
	s.typeText("9daacc053fdbf111c6e632c7d6ecea14")
	s.keys("Enter")
	scr = s.waitFor("the trace's rollout", regexp.MustCompile(`Rollouts 1/6 [\s\S]*›s3-r0005 `))
	if !strings.Contains(scr, "Trace s3-r0005 ") {
		t.Errorf("the waterfall does not show the trace's rollout:\n%s", scr)
	}

	s.keys("?")
	s.waitFor("help", regexp.MustCompile(`Help · q quit · esc or \? close`))
	s.keys("Escape")
	s.waitFor("help closed", regexp.MustCompile(`Span groups · preview`))
	s.keys("q")
	s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
}

// TestTmuxSmallHelp: a capture piped in (`open -`) opens the TUI with keys
// from the terminal; at 80×24 the help screen still says how to leave, and
// the footer does on every screen.
func TestTmuxSmallHelp(t *testing.T) {
	bin := tmuxBinary(t)
	dir := t.TempDir()
	copyCapture(t, dir, "per_rollout.console.jsonl")
	s := startTmux(t, dir, "cat per_rollout.console.jsonl | "+bin+" open -", 80, 24)
	scr := s.waitFor("the rollout list", regexp.MustCompile(`Rollouts 6 `))
	s.keys("j")
	s.waitFor("keys read from the terminal", regexp.MustCompile(`›s3-r0002 `))
	if !strings.Contains(scr, "q quit") {
		t.Errorf("the footer does not say how to quit:\n%s", scr)
	}
	s.keys("?")
	scr = s.waitFor("help", regexp.MustCompile(`Help · q quit · esc or \? close`))
	if !regexp.MustCompile(`(?m)^\s+q\s+quit`).MatchString(scr) {
		t.Errorf("the help lacks the quit key:\n%s", scr)
	}
	// The first heading names what its keys do.
	if !regexp.MustCompile(`(?m)^Help · .*\n(quit and close)\s`).MatchString(scr) {
		t.Errorf("the help's first heading is not \"quit and close\":\n%s", scr)
	}
	s.keys("q")
	s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
}

// TestTmuxBreaksInCapture opens real Gym's logs of a fleet whose model
// server did not read traceparent: the split rollouts name the hop and its
// reason, in the waterfall and in the joining verdict, each hop once.
func TestTmuxBreaksInCapture(t *testing.T) {
	bin := tmuxBinary(t)
	dir := t.TempDir()
	var files []string
	for _, p := range []string{"driver", "agent", "model", "resources"} {
		name := filepath.Join("broken-model", p+".log.gz")
		if err := os.MkdirAll(filepath.Join(dir, "broken-model"), 0o755); err != nil {
			t.Fatal(err)
		}
		copyCapture(t, dir, name)
		files = append(files, name)
	}
	s := startTmux(t, dir, bin+" open "+strings.Join(files, " "), 200, 50)
	scr := s.waitFor("the joining verdict", regexp.MustCompile(`joining\s+✓ intact 20/20\s+✓ intact 20/20`))
	// The hop is named by caller, callee and the call's span.
	const hop = "simple_agent → policy_model (POST /v1/responses): CLIENT span has no SERVER child"
	// Wrapped within the waterfall, never cut.
	if !strings.Contains(scr, "✗ split: "+hop) && !strings.Contains(waterfallText(scr), "✗ split: "+hop) {
		t.Errorf("the split rollout's waterfall does not name the hop:\n%s", scr)
	}
	if !strings.Contains(scr, "✗ in capture: "+hop) {
		t.Errorf("the joining verdict does not name the hop:\n%s", scr)
	}
	seen := map[string]bool{}
	for _, l := range regexp.MustCompile(`✗ (in capture|current|preview): [^│┃]*`).FindAllString(scr, -1) {
		l = strings.TrimSpace(l)
		if seen[l] {
			t.Errorf("broken hop listed twice: %q", l)
		}
		seen[l] = true
	}
	if len(seen) == 0 {
		t.Errorf("no broken-hop lines:\n%s", scr)
	}
	s.keys("q")
	s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
}

// waterfallText is the text of the panel right of the list (from the
// second box on each line), its lines joined with spaces, so a line the
// panel wrapped reads whole.
func waterfallText(scr string) string {
	var parts []string
	for _, l := range strings.Split(scr, "\n") {
		rs := []rune(l)
		boxes := 0
		for i, r := range rs {
			if r == '│' || r == '┃' {
				boxes++
				if boxes == 3 { // the list's left and right edges, then the waterfall's left
					parts = append(parts, strings.Trim(string(rs[i+1:]), " │┃"))
					break
				}
			}
		}
	}
	return strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
}
