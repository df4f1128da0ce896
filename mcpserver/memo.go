package mcpserver

import (
	"encoding/json"

	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// maxMemo bounds the results kept for one snapshot: an agent asks a few
// specs and cohorts again and again, not hundreds.
const maxMemo = 64

// memo keeps the analyses of one snapshot: a store publishes a new
// snapshot only when spans arrive, and until then the same question has
// the same answer. The results of preview, recommend and cohort (each a
// whole search or simulation) are kept by tool and arguments, and the
// parts tools share, by what they read. A new snapshot, evidence join,
// variant or registry starts it afresh. Held under Server.mu.
type memo struct {
	snap *model.Snapshot
	ev   *evidence.Joined
	reg  *groups.Registry
	v    report.Variant

	results map[string]any
	// latency is the preview's latency profile of the rollouts each
	// filter selects, whatever the spec.
	latency map[string]*whatif.Latency
}

// memoFor returns the memo of v's snapshot and ev, fresh when either
// changed.
func (s *Server) memoFor(v *view, ev *evidence.Joined) *memo {
	m := &s.memo
	if m.snap != v.snap || m.ev != ev || m.reg != v.reg || m.v != v.v {
		*m = memo{snap: v.snap, ev: ev, reg: v.reg, v: v.v, results: map[string]any{}, latency: map[string]*whatif.Latency{}}
	}
	return m
}

// memoKey is a tool's name and its arguments, as one string.
func memoKey(tool string, args any) string {
	b, err := json.Marshal(args)
	if err != nil {
		// Inputs are plain structs; never reached.
		panic(err)
	}
	return tool + "\x00" + string(b)
}

// get returns the kept result of key.
func (m *memo) get(key string) (any, bool) {
	r, ok := m.results[key]
	return r, ok
}

// put keeps r as key's result; past maxMemo results, one kept gives way.
func (m *memo) put(key string, r any) {
	if len(m.results) >= maxMemo {
		for k := range m.results {
			delete(m.results, k)
			break
		}
	}
	m.results[key] = r
}
