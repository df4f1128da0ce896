package groups

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/internal/testfile"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// realGymDir holds the captures of Gym's real telemetry code.
const realGymDir = "../../testdata/real-gym"

// gymVersionKV is the resource's nemo.gym.version in a console line.
var gymVersionKV = regexp.MustCompile(`"nemo\.gym\.version": "[^"]*", `)

// TestDetectVariantWithoutVersion: every real capture, G1 and G3, with
// nemo.gym.version taken out of every resource (no stored release pins
// G3's), is detected as the variant that made it, on named evidence: the
// driver where it emits spans, else the resource keys of Gym's processes.
// Without the driver's log too, the servers' resource keys alone tell.
func TestDetectVariantWithoutVersion(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(realGymDir, "*", "*", "console"))
	if len(dirs) == 0 {
		t.Fatal("no real captures")
	}
	variants := map[string]int{}
	for _, dir := range dirs {
		caseDir := filepath.Dir(dir)
		raw, err := os.ReadFile(filepath.Join(caseDir, "meta.json"))
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Variant string `json:"gym_variant"`
		}
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatalf("%s: %v", caseDir, err)
		}
		want := meta.Variant
		if want == "" {
			want = "G1" // the captures of Gym's merged telemetry predate the key
		}
		variants[want]++
		keys := map[string]string{"G1": "resource dl.rank without nv.dl.rank (", "G3": "resource nv.dl.rank ("}
		for _, withDriver := range []bool{true, false} {
			name := strings.TrimPrefix(caseDir, realGymDir+"/")
			if !withDriver {
				name += " without the driver"
			}
			t.Run(name, func(t *testing.T) {
				snap, driverSpans := readStripped(t, dir, withDriver)
				v, source := DetectVariant(snap)
				if v.Name != want {
					t.Fatalf("DetectVariant = %s (%s), want %s", v.Name, source, want)
				}
				wantSource := keys[want]
				if driverSpans {
					wantSource = map[string]string{"G1": "service.name nemo-gym/orchestrator (driver ends /orchestrator)",
						"G3": "service.name nemo-gym/supervisor (driver ends /supervisor)"}[want]
				}
				if !strings.HasPrefix(source, wantSource) {
					t.Errorf("evidence %q, want it to start %q", source, wantSource)
				}
				t.Logf("%s: %s", v.Name, source)
			})
		}
	}
	if variants["G1"] == 0 || variants["G3"] == 0 {
		t.Fatalf("captures per variant %v: want G1 and G3", variants)
	}
}

// readStripped reads a capture's console logs with nemo.gym.version taken
// out of every line, without the driver's log unless withDriver, and says
// whether Gym's driver process sent spans.
func readStripped(t *testing.T, dir string, withDriver bool) (*model.Snapshot, bool) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.log.gz"))
	tmp := t.TempDir()
	var paths []string
	for _, f := range files {
		if !withDriver && filepath.Base(f) == "driver.log.gz" {
			continue
		}
		b := gymVersionKV.ReplaceAll(testfile.Gunzip(t, f), nil)
		if bytes.Contains(b, []byte(GymVersionAttr)) {
			t.Fatalf("%s: %s left after stripping", f, GymVersionAttr)
		}
		p := filepath.Join(tmp, strings.TrimSuffix(filepath.Base(f), ".gz"))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	st := model.NewStore(model.Options{})
	t.Cleanup(st.Close)
	if _, err := receiver.ReadFiles(st, paths, receiver.ReadOptions{}); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	st.Sync()
	snap := st.Snapshot()
	in := snap.Interner()
	driver := false
	for _, res := range in.Resources() {
		if _, ok := res.Attrs.Get(in, GymVersionAttr); ok {
			t.Fatalf("%s: a resource still has %s", dir, GymVersionAttr)
		}
		if typ, ok := res.Attrs.Get(in, gymServerTypeAttr); ok && (typ.String() == "orchestrator" || typ.String() == "supervisor") {
			driver = true
		}
	}
	return snap, driver
}
