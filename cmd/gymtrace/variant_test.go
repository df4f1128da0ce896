package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// realAll is a capture of real Gym (G1) under span_groups all.
func realAll(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../testdata/real-gym/s41-obs0-iso/all/console/*.log.gz")
	if err != nil || len(files) != 4 {
		t.Fatalf("real-Gym capture: %v, %v", files, err)
	}
	return files
}

type previewOut struct {
	GymVariant       string              `json:"gym_variant"`
	GymVariantSource string              `json:"gym_variant_source"`
	Groups           []string            `json:"groups"`
	TelemetryOff     bool                `json:"telemetry_off"`
	Dropped          []string            `json:"dropped"`
	GymMessage       string              `json:"gym_message"`
	Snippets         map[string]string   `json:"snippets"`
	SnippetsRefused  string              `json:"snippets_refused"`
	Input            struct{ Spans int } `json:"input"`
	Result           struct {
		Spans, Dropped, Traces int
	} `json:"result"`
	PerGroup map[string]struct{ Captured, Kept int } `json:"per_group"`
}

func preview(t *testing.T, args ...string) previewOut {
	t.Helper()
	code, out, errOut := runGateCmd(t, previewCmd, append([]string{"--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("preview %v: exit %d, stderr %s", args, code, errOut)
	}
	var p previewOut
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPreviewVariantDetected(t *testing.T) {
	files := realAll(t)
	p := preview(t, append([]string{"--spec", "per_rollout"}, files...)...)
	if p.GymVariant != "G1" || p.GymVariantSource != "resource nemo.gym.version=0.5.1" {
		t.Errorf("variant %s (%s), want G1 from the resource", p.GymVariant, p.GymVariantSource)
	}
	if strings.Join(p.Groups, ",") != "agent,http_client,model_call,rollout,server,verify" {
		t.Errorf("G1 per_rollout = %v (no concurrency in G1)", p.Groups)
	}
	if _, ok := p.PerGroup["concurrency"]; ok {
		t.Error("per_group lists concurrency, a group G1 does not have")
	}
	if _, ok := p.PerGroup["step"]; !ok {
		t.Error("per_group lacks step, a G1 group")
	}
}

// TestPreviewTelemetryOff: G1 refuses a spec with an unknown name, and Gym
// then runs with telemetry off in every process.
func TestPreviewTelemetryOff(t *testing.T) {
	files := realAll(t)
	p := preview(t, append([]string{"--spec", "default,concurrency"}, files...)...)
	want := "Unknown span group or preset: 'concurrency'. Valid options: ['agent', 'all', 'checkpoint', 'default', 'evaluate', " +
		"'forward_backward', 'http_client', 'job', 'load_checkpoint', 'model_call', 'model_init', 'optimizer', 'per_rollout', " +
		"'rollout', 'sandbox', 'server', 'step', 'verify']"
	if !p.TelemetryOff || p.GymMessage != want {
		t.Errorf("telemetry_off %v, gym_message %q; want true, %q", p.TelemetryOff, p.GymMessage, want)
	}
	if p.Input.Spans == 0 || p.Result.Spans != 0 || p.Result.Traces != 0 || p.Result.Dropped != p.Input.Spans {
		t.Errorf("result %+v of %d spans, want nothing kept", p.Result, p.Input.Spans)
	}
	if len(p.Snippets) != 0 || !strings.Contains(p.SnippetsRefused, "switches telemetry off in every process") {
		t.Errorf("snippets %v, refused %q; want none", p.Snippets, p.SnippetsRefused)
	}
	// The text report says so first.
	_, out, _ := runGateCmd(t, previewCmd, append([]string{"--spec", "default,concurrency"}, files...)...)
	if !strings.Contains(out, "variant: Gym G1 (resource nemo.gym.version=0.5.1)\nGym refuses this spec and switches telemetry off in every process (no spans at all): "+want) ||
		!strings.Contains(out, "no snippet: ") {
		t.Errorf("text report:\n%s", out)
	}
}

// TestPreviewDropped: from G2 on, Gym drops an unknown name with a warning
// and applies the rest, so the preview is of the rest.
func TestPreviewDropped(t *testing.T) {
	files := realAll(t)
	p := preview(t, append([]string{"--gym-version", "G3", "--spec", "default,concurrency,step"}, files...)...)
	def := preview(t, append([]string{"--gym-version", "G3", "--spec", "default"}, files...)...)
	if p.GymVariant != "G3" || p.GymVariantSource != "--gym-version" || p.TelemetryOff {
		t.Errorf("variant %s (%s), off %v", p.GymVariant, p.GymVariantSource, p.TelemetryOff)
	}
	if strings.Join(p.Dropped, ",") != "concurrency,step" || !strings.HasPrefix(p.GymMessage, "Span group spec 'default,concurrency,step' names ['concurrency', 'step'], which no library registered") {
		t.Errorf("dropped %v, message %q", p.Dropped, p.GymMessage)
	}
	if p.Result != def.Result || p.Result.Spans == 0 {
		t.Errorf("result %+v, want default's %+v", p.Result, def.Result)
	}
	// The snippet offers what Gym applies: default.
	if p.Snippets["env"] != "NEMO_GYM_OTEL_SPAN_GROUPS=default" || p.SnippetsRefused != "" {
		t.Errorf("snippets %v (refused %q)", p.Snippets, p.SnippetsRefused)
	}
}

func TestCheckVariant(t *testing.T) {
	files := realAll(t)
	code, out, errOut := runGateCmd(t, checkCmd, append([]string{"--json", "--spec", "per_rollout,sandbx"}, files...)...)
	if code == exitUsage {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var c struct {
		GymVariant  string `json:"gym_variant"`
		SpecWarning string `json:"spec_warning"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if c.GymVariant != "G1" || !strings.Contains(c.SpecWarning, "switches telemetry off in every process") ||
		!strings.Contains(c.SpecWarning, "Unknown span group or preset: 'sandbx'") {
		t.Errorf("check = %+v", c)
	}
}

// TestGymConfigRefused: a span_groups list is a config Gym refuses; the
// commands that read --gym-config say where and why, exit 2.
func TestGymConfigRefused(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "gym.yaml")
	if err := os.WriteFile(cfg, []byte("telemetry:\n  enabled: true\n  span_groups: [server, http_client]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := realAll(t)
	for name, fn := range map[string]func([]string, *bytes.Buffer, *bytes.Buffer) int{"check": checkCmd, "preview": previewCmd} {
		args := append([]string{"--gym-config", cfg}, files...)
		if name == "preview" {
			args = append([]string{"--spec", "default"}, args...)
		}
		code, _, errOut := runGateCmd(t, fn, args...)
		want := cfg + `:3: telemetry.span_groups is a YAML list: Gym refuses the config (TelemetryConfig: "Input should be a valid string")`
		if code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", name, code, errOut, want)
		}
	}
}

// TestLensEnvFallback: NEMO_LENS_SPAN_GROUPS is the setting in force when
// NEMO_GYM_OTEL_SPAN_GROUPS is unset.
func TestLensEnvFallback(t *testing.T) {
	t.Setenv("NEMO_GYM_OTEL_SPAN_GROUPS", "")
	t.Setenv("NEMO_LENS_SPAN_GROUPS", "per_rollout")
	code, out, errOut := runGateCmd(t, checkCmd, append([]string{"--json"}, realAll(t)...)...)
	if code == exitUsage {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var c struct {
		Spec       string `json:"spec"`
		SpecSource string `json:"spec_source"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if c.Spec != "per_rollout" || c.SpecSource != "NEMO_LENS_SPAN_GROUPS" {
		t.Errorf("spec %q from %q, want per_rollout from NEMO_LENS_SPAN_GROUPS", c.Spec, c.SpecSource)
	}
}

// A live interface opened with nothing captured settles the variant from
// the first spans: the real capture's G1, its registry, the spec read under
// it; nothing before spans arrive, and nothing to do when it was pinned.
func TestLiveVariantSettlesFromTheCapture(t *testing.T) {
	if liveVariant("G3", "", "default") != nil {
		t.Fatal("--gym-version given: the variant must not be re-detected")
	}
	redetect := liveVariant("", "", "per_rollout")
	empty := model.NewStore(model.Options{})
	defer empty.Close()
	if c, settled := redetect(empty.Snapshot()); c != nil || settled {
		t.Fatalf("no spans yet: got %+v, settled %v; want to be asked again", c, settled)
	}
	st := model.NewStore(model.Options{})
	defer st.Close()
	if _, err := receiver.ReadFiles(st, realAll(t), receiver.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	c, settled := redetect(st.Snapshot())
	if !settled || c == nil {
		t.Fatalf("a G1 capture did not settle: %+v, %v", c, settled)
	}
	if c.Registry.Variant() != "G1" || c.Variant != "Gym G1 (resource nemo.gym.version=0.5.1)" {
		t.Errorf("settled on %s (%q), want G1 from the resource", c.Registry.Variant(), c.Variant)
	}
	if got := c.Registry.Format(c.Current); got != "per_rollout" || c.CurrentSpec != "per_rollout" {
		t.Errorf("spec under G1 = %q (%q), want per_rollout", got, c.CurrentSpec)
	}
}
