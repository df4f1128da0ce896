package report

import (
	"time"

	"github.com/nemo-gym/gymtrace/gate/advise"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Recommend is the result of `recommend --json` (README.md, "Recommend a
// spec") and the recommend tool.
type Recommend struct {
	Variant
	Budget      string   `json:"budget"`
	Must        []string `json:"must"`
	Never       []string `json:"never"`
	AllowSplits bool     `json:"allow_splits"`
	// Outcome: found, must_too_dear, none_fits or none_joins.
	Outcome        string                  `json:"outcome"`
	Reason         string                  `json:"reason"`
	SearchedGroups []string                `json:"searched_groups"`
	FreeGroups     []string                `json:"free_groups"`
	UnjudgedGroups []string                `json:"unjudged_groups"`
	Space          int                     `json:"space"`
	Previewed      int                     `json:"previewed"`
	Pruned         int                     `json:"pruned"`
	Best           *Candidate              `json:"best"`
	RunnersUp      []RunnerUp              `json:"runners_up"`
	Floor          *Candidate              `json:"floor"`
	Rollouts       int                     `json:"rollouts"`
	WallSeconds    float64                 `json:"wall_seconds"`
	BadLines       BadLines                `json:"bad_lines"`
	PerGroup       map[string]GroupFigures `json:"per_group"`
	// Page is set by a face that clamped what was asked (the MCP
	// recommend tool); the CLI never sets it.
	Page *Page `json:"page,omitempty"`
}

type Candidate struct {
	Spec           string            `json:"spec"`
	Groups         []string          `json:"groups"`
	Budget         *BudgetFit        `json:"budget"`
	Spans          int               `json:"spans"`
	Bytes          int64             `json:"bytes"`
	RolloutsJoined int               `json:"rollouts_joined"`
	RolloutsSplit  int               `json:"rollouts_split"`
	NewSplits      int               `json:"new_splits"`
	WallShare      float64           `json:"wall_share"`
	ErrorSpans     int               `json:"error_spans"`
	GroupsKept     int               `json:"groups_kept"`
	Snippets       map[string]string `json:"snippets"`
}

type RunnerUp struct {
	Candidate
	WorseBy string   `json:"worse_by"`
	Why     string   `json:"why"`
	Lacks   []string `json:"lacks"`
	Adds    []string `json:"adds"`
}

// NewRecommend is a's result, the search run with opt over snap on eng.
func NewRecommend(v Variant, eng *whatif.Engine, snap *model.Snapshot, a *advise.Advice, opt advise.Options, spanCost time.Duration, bad BadLines) Recommend {
	reg := eng.Registry()
	// Estimate's wall time and groups are Preview's, without simulating.
	wall := eng.Estimate(snap, reg.All()).WallSeconds
	out := Recommend{
		Variant: v, Budget: opt.Budget.String(), Must: NonNil(reg.Names(opt.Must)), Never: NonNil(reg.Names(opt.Never)),
		AllowSplits: opt.AllowSplits, Outcome: a.Outcome.String(), Reason: a.Outcome.Text(),
		SearchedGroups: NonNil(reg.Names(a.Searched)), FreeGroups: NonNil(reg.Names(a.Free)), UnjudgedGroups: NonNil(reg.Names(a.Unjudged)),
		Space: a.Space, Previewed: a.Previewed, Pruned: a.Pruned, RunnersUp: []RunnerUp{},
		Rollouts: len(eng.Structure(snap).Rollouts), WallSeconds: Round2(wall), BadLines: bad,
		PerGroup: map[string]GroupFigures{},
	}
	if a.Best != nil {
		out.Best = CandidateOf(reg, a.Best)
		rep := eng.Estimate(snap, a.Best.Set)
		for _, gc := range rep.PerGroup {
			if gc.Captured > 0 && ShownGroup(reg, gc.Group) {
				out.PerGroup[reg.Name(gc.Group)] = GroupFigures{Captured: gc.Captured, Kept: gc.Kept}
			}
		}
		AddWorth(out.PerGroup, reg, eng.Worth(snap, a.Best.Set, spanCost), spanCost)
	}
	out.Floor = CandidateOf(reg, a.Floor)
	for _, r := range a.RunnersUp {
		out.RunnersUp = append(out.RunnersUp, RunnerUp{Candidate: *CandidateOf(reg, &r.Candidate),
			WorseBy: r.Short.String(), Why: r.Why(a.Best), Lacks: NonNil(reg.Names(r.Lacks)), Adds: NonNil(reg.Names(r.Adds))})
	}
	return out
}

// CandidateOf is c's shape, nil for none.
func CandidateOf(reg *groups.Registry, c *advise.Candidate) *Candidate {
	if c == nil {
		return nil
	}
	out := &Candidate{
		Spec: reg.Spec(c.Set), Groups: NonNil(reg.Names(c.Set)), Budget: BudgetOf(c.Verdict), Spans: c.Spans, Bytes: c.Bytes,
		RolloutsJoined: c.RolloutsJoined, RolloutsSplit: c.RolloutsSplit, NewSplits: c.NewSplits,
		WallShare: Round4(c.WallShare), ErrorSpans: c.ErrorSpans, GroupsKept: c.Groups, Snippets: map[string]string{},
	}
	if spec, err := reg.CopyOut(c.Set); err == nil {
		out.Spec = spec
		out.Snippets["yaml"], out.Snippets["env"] = groups.TelemetryYAML(spec), groups.EnvLine(spec)
	}
	return out
}
