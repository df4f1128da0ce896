package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
)

// TestRealGymDetectsG1: every capture of real Gym's merged telemetry is G1,
// told by the resource nemo.gym.version=0.5.1 (the concurrency lineage's
// metrics are absent).
func TestRealGymDetectsG1(t *testing.T) {
	cases := realCases(t)
	if len(cases) < 13 {
		t.Fatalf("%d real-Gym captures, want 13", len(cases))
	}
	for _, dir := range cases {
		name, _ := filepath.Rel(realGym, dir)
		t.Run(name, func(t *testing.T) {
			snap := loadCase(t, dir)
			if snap.Stats.Stored == 0 {
				t.Fatal("no spans read")
			}
			v, source := groups.DetectVariant(snap)
			if want := loadSummary(t, dir).Meta.GymVariant; want == "G3" {
				if v.Name != "G3" || !strings.HasPrefix(source, "resource nemo.gym.version=0.7.0rc0") {
					t.Errorf("DetectVariant = %s (%s), want G3 from resource nemo.gym.version=0.7.0rc0", v.Name, source)
				}
				return
			}
			if v.Name != "G1" || source != "resource nemo.gym.version=0.5.1" {
				t.Errorf("DetectVariant = %s (%s), want G1 from resource nemo.gym.version=0.5.1", v.Name, source)
			}
			// What G1 does with a spec copied from a registry that had
			// concurrency: telemetry off in every process.
			if res := v.Registry().Resolve("default,concurrency"); !res.Off {
				t.Errorf("G1 default,concurrency = %+v, want telemetry off", res)
			}
		})
	}
}
