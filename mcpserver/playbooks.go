package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Instructions is what the server tells a client about itself on
// initialize.
const Instructions = `gymtrace holds the OpenTelemetry spans of NeMo Gym rollout jobs and finds the rollouts in them by structure: a rollout is the agent's POST /run and everything it causes across processes (policy model, resources servers, sandboxes). Under Gym's job group every rollout shares one trace, so think in rollouts, not traces: every tool here is keyed by rollout id.

A rollout is joined when all its spans carry one trace id, split when a hop between processes lost the traceparent (a process with span_groups server or http_client off, a callee that did not extract it, a request context carried over on a keep-alive connection), pending while too fresh to judge (live only). span_groups is Gym's setting (NEMO_GYM_OTEL_SPAN_GROUPS or telemetry.span_groups) choosing which groups of spans each process emits; the groups tool lists them for the capture's Gym variant.

Start with status. list_rollouts pages through rollouts (filter grammar: 'status=error', 'service=policy_model dur>2s', '-name~retry', 'id~abc'); get_rollout shows one rollout's tree, get_spans the details of up to 20 spans. check is the join check as the CLI's check --json gives it; explain says why one rollout is split and what to turn on. critical_path says which process holds a rollout's wall time; cohort compares the rollouts a filter selects against the others; compare puts two rollouts (or one under two specs) side by side. preview says what a span_groups spec would produce and whether it keeps the joins; recommend finds the spec that fits a budget.

Every answer is bounded: lists take limit and cursor, and say total, truncated and next_cursor; a limit above the most is clamped and notes says so. Answers are computed on a snapshot of the store, so a live run keeps ingesting while you read; ids stay stable, counts grow. The prompts split-rollouts and choose-span-groups are step-by-step playbooks.`

// Playbooks: short procedures for the questions asked most, as prompts
// and, for clients that only read resources, as resources.
var playbooks = []struct {
	name, title, desc, text string
}{
	{"split-rollouts", "Find why rollouts split", "Steps from a split rollout to the span_groups fix", `Find why rollouts split, and the fix:
1. status: how many rollouts are joined, split, pending. If the run is live and many are pending, wait a few seconds and call status again.
2. check: broken_hops lists each broken hop once, largest first, with from_service -> to_service, span_name, its cause code and the fix. One hop usually explains most splits.
3. list_rollouts with sort "-traces" (or filter on a service the hop names) to pick a split rollout, then explain with its rollout_id: its hops, cause by cause, and the fix in one sentence.
4. get_rollout with that id: each fragment (depth 0 rows, fragment index) is a piece of the rollout in its own trace; the top of the second fragment is where the traceparent was lost. get_spans on that span and on the CLIENT span above it shows the URL, the process and whether a traceparent was sent.
5. The fix is a span_groups change (turn server and http_client on in the process named) or, for cause context_carried_over, a client fix (a fresh request context per request), not telemetry. Confirm with preview of the new spec: result.rollouts_joined should reach the rollouts count, and breaks should be empty.`},
	{"choose-span-groups", "Choose span_groups for a budget", "Steps to pick the spec that keeps most within a span or byte budget, joins intact", `Choose span_groups for a budget:
1. groups: the variant's groups and presets; the capture should have been made with span_groups all, so that every group's cost is measured (status and check tell what was captured).
2. check: the joins as captured. A spec cannot mend a hop broken for another reason than a group being off.
3. recommend with the budget (e.g. "200 spans/rollout", "5 MB/day"), must (groups you need, e.g. server,http_client) and never (groups you refuse): the spec that keeps most under the budget with every rollout still joined, its cost, and the runner-ups with why they lost.
4. preview of the recommended spec (and of the setting in force): spans and bytes per rollout, rollouts joined, breaks it introduces, and Gym's message if the variant would drop or refuse a name.
5. Give the user the snippet preview returns (the YAML block or the environment line); under a G1 variant an unknown name switches telemetry off entirely, so never hand-edit a spec the preview did not accept.`},
}

func (s *Server) addPlaybooks() {
	for _, p := range playbooks {
		text := p.text
		s.srv.AddPrompt(&mcp.Prompt{Name: p.name, Title: p.title, Description: p.desc},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Description: p.desc,
					Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
			})
		uri := "gymtrace://playbooks/" + p.name
		s.srv.AddResource(&mcp.Resource{URI: uri, Name: p.name, Title: p.title, Description: p.desc, MIMEType: "text/markdown"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
			})
	}
}
