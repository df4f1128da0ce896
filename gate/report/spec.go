package report

import (
	"fmt"

	"github.com/nemo-gym/gymtrace/gate/groups"
)

// Applied resolves a spec a command or tool works under as the variant
// does: a spec Gym refuses (telemetry off), or one that leaves no group
// on, gives nothing to work with and is an error; names Gym drops come
// back as warning, and the rest applies. source names where the spec came
// from in the messages ("--spec", "FILE: telemetry.span_groups").
func Applied(reg *groups.Registry, spec, source string) (res groups.Resolution, warning string, err error) {
	res = reg.Resolve(spec)
	switch {
	case res.Off:
		return res, "", fmt.Errorf("span_groups %q from %s: %s", spec, source, res.Effect())
	case res.Set == 0 && len(res.Dropped) > 0:
		return res, "", fmt.Errorf("span_groups %q from %s: %s: no group is left on", spec, source, res.Effect())
	case res.Set == 0:
		return res, "", fmt.Errorf("span_groups %q from %s: names no group or preset", spec, source)
	}
	if len(res.Dropped) > 0 {
		warning = fmt.Sprintf("span_groups %q from %s: %s", spec, source, res.Effect())
	}
	return res, warning, nil
}
