package report

import "github.com/nemo-gym/gymtrace/gate/cohort"

// Cohort is the result of `diff --cohort --json` and the cohort tool:
// the rollouts a filter selects against a baseline, feature by feature.
type Cohort struct {
	Variant
	Cohort   CohortSide  `json:"cohort"`
	Baseline CohortSide  `json:"baseline"`
	Overlap  int         `json:"overlap"`
	Rows     []CohortRow `json:"rows"`
	// Page is set by a face that cut the id lists (the MCP cohort tool);
	// the CLI prints them whole.
	Page *Page `json:"page,omitempty"`
}

// CohortSide is one side: its filter and its rollouts.
type CohortSide struct {
	Filter   string   `json:"filter"`
	Rollouts int      `json:"rollouts"`
	IDs      []string `json:"rollout_ids"`
}

// CohortRow is one feature whose metric differs between the sides.
type CohortRow struct {
	Rank      int             `json:"rank"`
	Kind      string          `json:"kind"`
	Service   string          `json:"service,omitempty"`
	Name      string          `json:"name"`
	Metric    string          `json:"metric"`
	Cohort    float64         `json:"cohort"`
	Baseline  float64         `json:"baseline"`
	CohortN   int             `json:"cohort_n"`
	BaselineN int             `json:"baseline_n"`
	Effect    float64         `json:"effect"`
	Same      []CohortFeature `json:"same"`
}

// CohortFeature is a feature a row stands for too.
type CohortFeature struct {
	Kind    string `json:"kind"`
	Service string `json:"service,omitempty"`
	Name    string `json:"name"`
}

// NewCohort is cmp's result, its rows cut to the top (0: all).
func NewCohort(v Variant, cohortText, baselineText string, cmp *cohort.Comparison, top int) Cohort {
	out := Cohort{Variant: v, Overlap: cmp.Overlap, Rows: []CohortRow{},
		Cohort:   CohortSide{Filter: cohortText, Rollouts: len(cmp.Cohort), IDs: []string{}},
		Baseline: CohortSide{Filter: baselineText, Rollouts: len(cmp.Baseline), IDs: []string{}}}
	for _, r := range cmp.Cohort {
		out.Cohort.IDs = append(out.Cohort.IDs, r.ID)
	}
	for _, r := range cmp.Baseline {
		out.Baseline.IDs = append(out.Baseline.IDs, r.ID)
	}
	rows := cmp.Rows
	if top > 0 && len(rows) > top {
		rows = rows[:top]
	}
	for i, r := range rows {
		row := CohortRow{Rank: i + 1, Kind: r.Feature.Kind.String(), Service: r.Feature.Service, Name: r.Feature.Name,
			Metric: r.Metric.String(), Cohort: Round4(r.Cohort), Baseline: Round4(r.Baseline), CohortN: r.CohortN, BaselineN: r.BaselineN,
			Effect: Round4(r.Effect), Same: []CohortFeature{}}
		for _, f := range r.Same {
			row.Same = append(row.Same, CohortFeature{Kind: f.Kind.String(), Service: f.Service, Name: f.Name})
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}
