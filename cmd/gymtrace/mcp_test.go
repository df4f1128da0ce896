package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPMatchesCLI starts the real binary as an MCP client does (`gymtrace
// mcp FILE...` on stdio) and holds every tool that has a CLI counterpart to
// that command's --json, number for number.
func TestMCPMatchesCLI(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/real-gym/s41-obs0-iso/broken-model/console/*")
	if len(files) == 0 {
		t.Fatal("no capture")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.Command(gymtraceBinary(t), append([]string{"mcp"}, files...)...)
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr: %s)", err, stderr.String())
	}
	defer cs.Close()

	cli := func(run func([]string, *bytes.Buffer, *bytes.Buffer) int, args ...string) map[string]any {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code > exitBroken {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return m
	}
	tool := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	check := cli(func(a []string, o, e *bytes.Buffer) int { return runCheck(a, o, e) }, append([]string{"--json"}, files...)...)
	if got := tool("check", nil); !reflect.DeepEqual(got, check) {
		t.Errorf("check tool != check --json:\n got %v\nwant %v", got, check)
	}
	groupsOut := cli(func(a []string, o, e *bytes.Buffer) int { return runGroups(a, o, e) }, "--json", "--gym-version", check["gym_variant"].(string))
	got := tool("groups", nil)
	// The tool tells the variant from the capture, the command is pinned.
	groupsOut["gym_variant_source"], got["gym_variant_source"] = "", ""
	if !reflect.DeepEqual(got, groupsOut) {
		t.Errorf("groups tool != groups --json:\n got %v\nwant %v", got, groupsOut)
	}
	split := check["split_rollouts"].([]any)
	id := split[0].(string)
	path := cli(func(a []string, o, e *bytes.Buffer) int { return runPath(a, o, e) }, append([]string{"--json", id}, files...)...)
	if got := tool("critical_path", map[string]any{"rollout_id": id}); !reflect.DeepEqual(got, path) {
		t.Errorf("critical_path tool != path --json:\n got %v\nwant %v", got, path)
	}
	cohort := cli(func(a []string, o, e *bytes.Buffer) int { return runDiff(a, o, e) },
		append([]string{"--json", "--cohort", "id=" + id, "--top", "20"}, files...)...)
	if got := tool("cohort", map[string]any{"cohort": "id=" + id, "top": 20}); !reflect.DeepEqual(got, cohort) {
		t.Errorf("cohort tool != diff --cohort --json:\n got %v\nwant %v", got, cohort)
	}
}
