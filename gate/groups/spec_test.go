package groups

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindSpec: the setting in force, in Gym's order, and a config Gym
// refuses named by file:line with Gym's reason.
func TestFindSpec(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	set := write("set.yaml", "# Gym config\ntelemetry:\n  enabled: true\n  span_groups: \"per_rollout,sandbox\"\n")
	blank := write("blank.yaml", "telemetry:\n  enabled: true\n  span_groups: \"  \"\n")
	unset := write("unset.yaml", "telemetry:\n  enabled: true\n")
	noBlock := write("noblock.yaml", "policy_model:\n  responses_api_models: {}\n")
	nullBlock := write("nullblock.yaml", "telemetry:\n")
	list := write("list.yaml", "telemetry:\n  enabled: true\n  span_groups:\n    - server\n    - http_client\n")
	flow := write("flow.yaml", "telemetry: {span_groups: [server, http_client]}\n")
	null := write("null.yaml", "telemetry:\n  span_groups: null\n")
	tilde := write("tilde.yaml", "telemetry:\n  enabled: true\n\n  span_groups: ~\n")
	number := write("number.yaml", "telemetry:\n  span_groups: 5\n")
	boolean := write("bool.yaml", "telemetry:\n  span_groups: on\n")
	quotedOn := write("quoted.yaml", "telemetry:\n  span_groups: \"on\"\n")
	notMap := write("notmap.yaml", "telemetry: all\n")
	bad := write("bad.yaml", "telemetry: [\n")

	env := func(gym, lens string) func(string) string {
		return func(k string) string {
			switch k {
			case EnvSpanGroups:
				return gym
			case EnvLensSpanGroups:
				return lens
			}
			return ""
		}
	}
	cases := []struct {
		name            string
		flag, gym, lens string
		cfg             string
		spec, source    string
		errHas          string // non-empty: an error naming this
		unreadable      bool   // the error is reading the file, not Gym's refusal
	}{
		{name: "flag first", flag: "all", gym: "default", lens: "verify", cfg: set, spec: "all", source: SourceFlag},
		{name: "gym env over the config", gym: "verify,default", lens: "all", cfg: set, spec: "verify,default", source: SourceEnv},
		{name: "config over the lens env", lens: "all", cfg: set, spec: "per_rollout,sandbox", source: set + ": telemetry.span_groups"},
		{name: "config without span_groups: Gym's default hides the lens env", lens: "all", cfg: unset, spec: "default",
			source: unset + ": telemetry.span_groups unset (Gym's default); it hides NEMO_LENS_SPAN_GROUPS"},
		{name: "config without a telemetry block", cfg: noBlock, spec: "default", source: noBlock + ": telemetry.span_groups unset (Gym's default)"},
		{name: "empty telemetry block", cfg: nullBlock, spec: "default", source: nullBlock + ": telemetry.span_groups unset (Gym's default)"},
		{name: "blank config value falls to the lens env", lens: "per_rollout", cfg: blank, spec: "per_rollout", source: SourceLensEnv},
		{name: "blank config value, nothing else: default", cfg: blank, spec: "default", source: SourceDefault},
		{name: "blank gym env falls through", gym: "  ", lens: "all", spec: "all", source: SourceLensEnv},
		{name: "lens env alone", lens: "per_rollout", spec: "per_rollout", source: SourceLensEnv},
		{name: "nothing", spec: "default", source: SourceDefault},
		{name: "quoted on is a string", cfg: quotedOn, spec: "on", source: quotedOn + ": telemetry.span_groups"},
		{name: "a list", cfg: list, errHas: list + `:4: telemetry.span_groups is a YAML list: Gym refuses the config (TelemetryConfig: "Input should be a valid string") and does not start; write one comma-separated string`},
		{name: "a flow list", cfg: flow, errHas: flow + ":1: telemetry.span_groups is a YAML list"},
		{name: "null", cfg: null, errHas: null + ":2: telemetry.span_groups is null: Gym refuses the config"},
		{name: "tilde", cfg: tilde, errHas: tilde + ":4: telemetry.span_groups is null"},
		{name: "a number", cfg: number, errHas: number + ":2: telemetry.span_groups is a number"},
		{name: "YAML 1.1 boolean", cfg: boolean, errHas: boolean + ":2: telemetry.span_groups is a boolean"},
		{name: "telemetry not a mapping", cfg: notMap, errHas: notMap + `:1: telemetry is a YAML str: Gym refuses the config (TelemetryConfig: "Input should be a valid dictionary`},
		// A config that cannot be read is an error too, not a silent default.
		{name: "a config that is not YAML", cfg: bad, errHas: bad, unreadable: true},
		{name: "a missing config", cfg: filepath.Join(dir, "nope.yaml"), errHas: "nope.yaml", unreadable: true},
		// Gym validates the config before it reads any variable.
		{name: "a bad config fails whatever the env", gym: "default", cfg: list, errHas: list + ":4: telemetry.span_groups is a YAML list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, source, err := FindSpec(tc.flag, env(tc.gym, tc.lens), tc.cfg)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) || errors.Is(err, ErrGymConfig) == tc.unreadable {
					t.Fatalf("FindSpec = %q, %q, %v; want an error containing %q", spec, source, err, tc.errHas)
				}
				return
			}
			if err != nil || spec != tc.spec || source != tc.source {
				t.Errorf("FindSpec = %q, %q, %v; want %q, %q", spec, source, err, tc.spec, tc.source)
			}
		})
	}
}
