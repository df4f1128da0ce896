package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// capture is a real Gym run whose model server did not extract the
// traceparent: every rollout split at one hop.
const capture = "../testdata/real-gym/s41-obs0-iso/broken-model/console/*"

// loaded reads pattern into a new store, as `gymtrace mcp` does.
func loaded(t *testing.T, pattern string) (*model.Store, *groups.Registry, report.Variant) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("glob %s: %v (%d files)", pattern, err, len(files))
	}
	store := model.NewStore(model.Options{})
	t.Cleanup(store.Close)
	if _, err := receiver.ReadFiles(store, files, receiver.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	store.Sync()
	v, source := groups.DetectVariant(store.Snapshot())
	return store, v.Registry(), report.VariantOf(v, source)
}

// transports connects the SDK's own client to srv over each transport:
// newline-delimited JSON on a pair of pipes (what stdio carries), and
// streamable HTTP on a loopback server.
func transports(t *testing.T, srv *Server) map[string]*mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	out := map[string]*mcp.ClientSession{}

	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	sess, err := srv.MCP().Connect(ctx, &mcp.IOTransport{Reader: sr, Writer: sw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	out["stdio"] = cs

	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	hc, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hc.Close() })
	out["http"] = hc
	return out
}

// call calls a tool and decodes its structured result into out; it
// returns the error text of a tool error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): %v", name, args, err)
	}
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: decode %s: %v", name, b, err)
		}
	}
	return ""
}

func newServer(t *testing.T) (*Server, *model.Store, *groups.Registry, report.Variant) {
	store, reg, v := loaded(t, capture)
	return New(Config{Source: store, Registry: reg, Variant: v, Setting: report.Setting{Spec: "default", Source: "default"}}), store, reg, v
}

func TestTools(t *testing.T) {
	srv, store, reg, v := newServer(t)
	snap := store.Snapshot()
	// What the CLI computes, on an engine of its own.
	eng := whatif.NewEngine(reg)
	chk := eng.Check(snap, time.Now(), 0)
	wantCheck := report.NewCheck(v, reg, chk, report.Setting{Spec: "default", Source: "default"}, report.BadLines{Samples: []string{}})
	st := chk.Structure
	if chk.Split == 0 || chk.Rollouts < 10 {
		t.Fatalf("capture: %d rollouts, %d split: want a split capture", chk.Rollouts, chk.Split)
	}
	for name, cs := range transports(t, srv) {
		t.Run(name, func(t *testing.T) {
			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
				if tl.OutputSchema == nil || tl.InputSchema == nil {
					t.Errorf("tool %s: no input or output schema", tl.Name)
				}
			}
			sort.Strings(names)
			for _, want := range []string{"check", "cohort", "compare", "critical_path", "explain", "get_rollout", "get_spans", "groups", "list_rollouts", "preview", "recommend", "status"} {
				if sort.SearchStrings(names, want) == len(names) || names[sort.SearchStrings(names, want)] != want {
					t.Errorf("tools/list = %v, lacks %s", names, want)
				}
			}

			var status report.Status
			call(t, cs, "status", nil, &status)
			if status.Rollouts != chk.Rollouts || status.RolloutsSplit != chk.Split || status.RolloutsJoined != chk.Joined || status.SpansStored != snap.Stats.Stored || status.Job != "ended" {
				t.Errorf("status = %+v, want the check's %d rollouts, %d split, %d joined, %d spans, job ended", status, chk.Rollouts, chk.Split, chk.Joined, snap.Stats.Stored)
			}

			var got report.Check
			call(t, cs, "check", nil, &got)
			if !reflect.DeepEqual(got, wantCheck) {
				t.Errorf("check = %+v\nwant %+v", got, wantCheck)
			}

			var groupsOut report.Groups
			call(t, cs, "groups", nil, &groupsOut)
			if want := report.NewGroups(v, reg); !reflect.DeepEqual(groupsOut, want) {
				t.Errorf("groups = %+v\nwant %+v", groupsOut, want)
			}

			// Every rollout, paged 7 at a time, in capture order.
			var ids []string
			cursor := ""
			for pages := 0; ; pages++ {
				var l report.RolloutList
				call(t, cs, "list_rollouts", map[string]any{"limit": 7, "cursor": cursor}, &l)
				if l.Total != chk.Rollouts {
					t.Fatalf("list_rollouts total %d, want %d", l.Total, chk.Rollouts)
				}
				for _, r := range l.Rollouts {
					ids = append(ids, r.RolloutID)
					if want := chk.ByRollout[r.RolloutID].Status.String(); r.Status != want {
						t.Errorf("rollout %s status %s, want %s", r.RolloutID, r.Status, want)
					}
				}
				if !l.Truncated {
					break
				}
				cursor = l.NextCursor
				if pages > chk.Rollouts {
					t.Fatal("list_rollouts pages for ever")
				}
			}
			var wantIDs []string
			for _, r := range st.Rollouts {
				wantIDs = append(wantIDs, r.ID)
			}
			if !reflect.DeepEqual(ids, wantIDs) {
				t.Errorf("paged ids %v\nwant %v", ids, wantIDs)
			}

			// Sorted by spans, descending.
			var bySpans report.RolloutList
			call(t, cs, "list_rollouts", map[string]any{"sort": "-spans", "limit": 500}, &bySpans)
			for i := 1; i < len(bySpans.Rollouts); i++ {
				if bySpans.Rollouts[i-1].Spans < bySpans.Rollouts[i].Spans {
					t.Errorf("sort -spans: row %d has %d spans after %d", i, bySpans.Rollouts[i].Spans, bySpans.Rollouts[i-1].Spans)
				}
			}

			// A filter: the rollouts with a policy_model span.
			var filtered report.RolloutList
			call(t, cs, "list_rollouts", map[string]any{"filter": "service=policy_model"}, &filtered)
			if filtered.Total == 0 || filtered.Total > chk.Rollouts {
				t.Errorf("filter service=policy_model: %d rollouts of %d", filtered.Total, chk.Rollouts)
			}
			for _, r := range filtered.Rollouts {
				if !contains(r.Services, "nemo-gym/policy_model") {
					t.Errorf("filter service=policy_model: row %s has services %v", r.RolloutID, r.Services)
				}
			}

			// One rollout: its tree, its spans, why it splits, its path.
			id := wantIDs[0]
			var d report.RolloutDetail
			call(t, cs, "get_rollout", map[string]any{"rollout_id": id, "depth": 64, "max_nodes": 2000}, &d)
			r := st.Rollouts[0]
			if len(d.Tree) != r.Spans || d.Spans != r.Spans || d.Fragments != len(r.Fragments) || d.Truncated {
				t.Errorf("get_rollout: %d nodes, spans %d, fragments %d, truncated %v; want %d spans in %d fragments", len(d.Tree), d.Spans, d.Fragments, d.Truncated, r.Spans, len(r.Fragments))
			}
			sum := 0
			for _, c := range d.PerService {
				sum += c.Spans
			}
			if sum != r.Spans {
				t.Errorf("get_rollout per_service sums to %d spans, want %d", sum, r.Spans)
			}
			var shallow report.RolloutDetail
			call(t, cs, "get_rollout", map[string]any{"rollout_id": id, "depth": 1, "max_nodes": 2}, &shallow)
			if len(shallow.Tree) != 2 || shallow.Total <= 2 || !shallow.Truncated || !strings.HasPrefix(shallow.NextCursor, pageCursorPrefix) {
				t.Errorf("get_rollout depth 1, 3 nodes: %d nodes, truncated %v, cursor %q", len(shallow.Tree), shallow.Truncated, shallow.NextCursor)
			}
			for _, n := range shallow.Tree {
				if n.Depth > 1 {
					t.Errorf("get_rollout depth 1 lists a node at depth %d", n.Depth)
				}
			}

			var spans report.Spans
			call(t, cs, "get_spans", map[string]any{"span_ids": []string{d.Tree[0].SpanID, d.Tree[1].SpanID, "00000000000000ff"}}, &spans)
			if len(spans.Spans) != 2 || spans.Spans[0].SpanID != d.Tree[0].SpanID || spans.Spans[0].RolloutID != id || !reflect.DeepEqual(spans.NotFound, []string{"00000000000000ff"}) {
				t.Errorf("get_spans = %+v", spans)
			}
			if sp := spans.Spans[1]; sp.ParentID == "" || len(sp.Attributes) == 0 || sp.Resource["service.name"] == "" {
				t.Errorf("get_spans: the second span lacks its parent, attributes or resource: %+v", sp)
			}

			var ex report.Explain
			call(t, cs, "explain", map[string]any{"rollout_id": id}, &ex)
			rc := chk.ByRollout[id]
			if ex.Status != rc.Status.String() || len(ex.Hops) != len(rc.Hops) || !strings.Contains(ex.Summary, id) {
				t.Errorf("explain = %+v, want status %s with %d hops", ex, rc.Status, len(rc.Hops))
			}
			for _, h := range ex.Hops {
				if h.Fix != "" && (!contains(ex.Fixes, h.Fix) || !strings.Contains(ex.Summary, "fix: ")) {
					t.Errorf("explain: hop fix %q missing from fixes %v or the summary %q", h.Fix, ex.Fixes, ex.Summary)
				}
			}
			if rc.Status == whatif.Split && !strings.Contains(ex.Summary, ex.Hops[0].Reason) {
				t.Errorf("explain of a split rollout: summary %q lacks its main reason", ex.Summary)
			}
			var exAll report.Explain
			call(t, cs, "explain", nil, &exAll)
			if len(exAll.Hops) != len(wantCheck.BrokenHops) || exAll.Status != "split" {
				t.Errorf("explain of the capture: %+v, want the check's %d hops", exAll, len(wantCheck.BrokenHops))
			}

			var path report.Path
			call(t, cs, "critical_path", map[string]any{"rollout_id": id}, &path)
			if path.RolloutID != id || len(path.Segments) == 0 || path.DurationMS <= 0 {
				t.Errorf("critical_path = %+v", path)
			}

			var pv report.Preview
			call(t, cs, "preview", map[string]any{"spec": "all", "limit": 3}, &pv)
			if len(pv.PerRollout) != 3 || pv.Page == nil || !pv.Page.Truncated || pv.Page.Total != chk.Rollouts || pv.Input.Rollouts != chk.Rollouts {
				t.Errorf("preview limit 3: %d rows, page %+v, input %+v", len(pv.PerRollout), pv.Page, pv.Input)
			}
			var pv2 report.Preview
			call(t, cs, "preview", map[string]any{"spec": "all", "limit": 3, "cursor": pv.Page.NextCursor}, &pv2)
			if len(pv2.PerRollout) != 3 || pv2.PerRollout[0].RolloutID != wantIDs[3] {
				t.Errorf("preview page 2 starts at %+v, want %s", pv2.PerRollout, wantIDs[3])
			}
			var ck report.Check
			call(t, cs, "check", map[string]any{"limit": 2}, &ck)
			if len(ck.SplitRollouts) != 2 || ck.Page == nil || ck.Page.Total != chk.Split || !ck.Page.Truncated {
				t.Errorf("check limit 2: split_rollouts %v, page %+v", ck.SplitRollouts, ck.Page)
			}
			var same report.Diff
			call(t, cs, "compare", map[string]any{"a": id}, &same)
			if len(same.OnlyA)+len(same.OnlyB)+len(same.Changed) != 0 || same.FirstDivergence != nil {
				t.Errorf("compare of a rollout with itself: %+v", same)
			}
			var rec report.Recommend
			call(t, cs, "recommend", map[string]any{"budget": "1000spans/rollout", "runners_up": 50}, &rec)
			if rec.Outcome == "" || len(rec.RunnersUp) > MaxRunnersUp || rec.Page == nil || !strings.Contains(rec.Page.Notes[0], "clamped to 20") {
				t.Errorf("recommend: %+v", rec)
			}
			var co report.Cohort
			call(t, cs, "cohort", map[string]any{"cohort": "id=" + id, "top": 5}, &co)
			if co.Cohort.Rollouts != 1 || co.Baseline.Rollouts != chk.Rollouts-1 || len(co.Rows) > 5 {
				t.Errorf("cohort of one: %d vs %d rollouts, %d rows", co.Cohort.Rollouts, co.Baseline.Rollouts, len(co.Rows))
			}
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestToolErrors: every error says what was wrong and what would do.
func TestToolErrors(t *testing.T) {
	srv, store, reg, _ := newServer(t)
	st := whatif.NewEngine(reg).Structure(store.Snapshot())
	id := st.Rollouts[0].ID
	for name, cs := range transports(t, srv) {
		t.Run(name, func(t *testing.T) {
			tests := []struct {
				tool string
				args map[string]any
				want []string
			}{
				{"get_rollout", map[string]any{"rollout_id": id[:len(id)-1]}, []string{"no rollout", "nearest: " + `"` + id + `"`}},
				{"get_rollout", map[string]any{"rollout_id": ""}, []string{"rollout_id is empty"}},
				{"explain", map[string]any{"rollout_id": "nope"}, []string{`no rollout "nope"`, "nearest"}},
				{"critical_path", map[string]any{"rollout_id": id + "x"}, []string{"nearest: " + `"` + id + `"`}},
				{"get_spans", map[string]any{"span_ids": []string{"xyz"}}, []string{`span id "xyz": want 16 hex digits`}},
				{"get_spans", map[string]any{"span_ids": []string{}}, []string{"span_ids is empty"}},
				{"get_spans", map[string]any{"span_ids": []string{"0000000000000001"}, "rollout_id": "nope"}, []string{`no rollout "nope"`}},
				{"list_rollouts", map[string]any{"filter": `name="unclosed`}, []string{"filter: ", "syntax: "}},
				{"list_rollouts", map[string]any{"sort": "size"}, []string{`sort "size": want one of`, "duration"}},
				{"list_rollouts", map[string]any{"cursor": "abc"}, []string{`cursor "abc"`}},
				{"check", map[string]any{"filter": "dur>fast"}, []string{"filter: "}},
				{"cohort", map[string]any{"cohort": ""}, []string{"cohort is empty"}},
				{"cohort", map[string]any{"cohort": "status=error", "baseline": "dur>>1"}, []string{"baseline: "}},
				{"list_rollouts", map[string]any{"limit": "many"}, []string{"limit"}},
				{"list_rollouts", map[string]any{"filter": "reward>0"}, []string{`filter "reward>0": reward, verdict, failure and task are read from Gym's files`, "--evidence PATH"}},
				{"list_rollouts", map[string]any{"sort": "-reward"}, []string{`sort "-reward": rewards are read from Gym's files`}},
				{"cohort", map[string]any{"cohort": "verdict=unhealthy"}, []string{"--evidence PATH"}},
				{"preview", map[string]any{"spec": ""}, []string{"spec is empty"}},
				{"preview", map[string]any{"spec": "all", "budget": "lots"}, []string{"budget: "}},
				{"preview", map[string]any{"spec": "all", "filter": "dur>"}, []string{"filter: "}},
				{"recommend", map[string]any{"budget": ""}, []string{"budget is empty"}},
				{"recommend", map[string]any{"budget": "10spans/rollout", "must": "nosuchgroup"}, []string{"must: ", "nosuchgroup"}},
				{"compare", map[string]any{"a": id, "b": "nope"}, []string{"rollout B: ", `no rollout "nope"`, "nearest"}},
				{"compare", map[string]any{"a": id, "a_spec": "nosuchgroup"}, []string{`span_groups "nosuchgroup" from a_spec argument`}},
			}
			for _, tt := range tests {
				msg := call(t, cs, tt.tool, tt.args, nil)
				if msg == "" {
					t.Errorf("%s(%v): no error", tt.tool, tt.args)
					continue
				}
				for _, w := range tt.want {
					if !strings.Contains(msg, w) {
						t.Errorf("%s(%v) = %q, want it to say %q", tt.tool, tt.args, msg, w)
					}
				}
			}

			// Too much asked is clamped, and said.
			var l report.RolloutList
			call(t, cs, "list_rollouts", map[string]any{"limit": 1_000_000}, &l)
			if len(l.Notes) == 0 || !strings.Contains(l.Notes[0], "clamped to 500") {
				t.Errorf("limit 1e6: notes %v, want it clamped to 500", l.Notes)
			}
			var sp report.Spans
			ids := make([]string, 25)
			for i := range ids {
				ids[i] = "000000000000000" + string(rune('a'+i%6))
			}
			call(t, cs, "get_spans", map[string]any{"span_ids": ids}, &sp)
			if len(sp.Notes) == 0 || !strings.Contains(sp.Notes[0], "the first 20") {
				t.Errorf("25 span ids: notes %v, want the first 20 answered", sp.Notes)
			}
			var d report.RolloutDetail
			call(t, cs, "get_rollout", map[string]any{"rollout_id": id, "max_nodes": 99999, "depth": 1000}, &d)
			if len(d.Notes) < 2 {
				t.Errorf("get_rollout with huge bounds: notes %v, want both clamped", d.Notes)
			}
		})
	}
}

// TestPlaybooks: the instructions and playbooks reach the client.
func TestPlaybooks(t *testing.T) {
	srv, _, _, _ := newServer(t)
	for name, cs := range transports(t, srv) {
		t.Run(name, func(t *testing.T) {
			if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "rollout") {
				t.Errorf("instructions = %q", ins)
			}
			ctx := context.Background()
			for _, p := range playbooks {
				gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: p.name})
				if err != nil || len(gp.Messages) != 1 {
					t.Fatalf("prompt %s: %v, %v", p.name, gp, err)
				}
				rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "gymtrace://playbooks/" + p.name})
				if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != p.text {
					t.Fatalf("resource %s: %v, %v", p.name, rr, err)
				}
			}
		})
	}
}

// TestRebinding: a request that reached the loopback address under
// another host name is refused, as a DNS-rebinding page's would be.
func TestRebinding(t *testing.T) {
	srv, _, _, _ := newServer(t)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tt := range []struct {
		host string
		want int
	}{{"evil.example:80", http.StatusForbidden}, {"", http.StatusOK}} {
		req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tt.host != "" {
			req.Host = tt.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("Host %q: status %d, want %d", tt.host, resp.StatusCode, tt.want)
		}
	}
}
