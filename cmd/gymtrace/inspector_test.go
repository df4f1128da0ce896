package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// inspectorVersion is the MCP Inspector whose CLI mode plays the client no
// one here wrote. 1.0.3: the 2.x line wants Node 22, Debian's is 20.
const inspectorVersion = "1.0.3"

// inspector returns the Inspector's binary: $GYMTRACE_MCP_INSPECTOR, else
// the one .ci/run installs under .ci/cache, installed there now if npm
// can; the test is skipped only where Node or npm is missing.
func inspector(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GYMTRACE_MCP_INSPECTOR"); p != "" {
		return p
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the MCP Inspector needs Node and npm: %s not found (.ci/run installs the Inspector with npm)", tool)
		}
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", ".ci", "cache", "inspector"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		out, err := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--silent",
			"@modelcontextprotocol/inspector@"+inspectorVersion).CombinedOutput()
		if err != nil {
			t.Fatalf("npm install @modelcontextprotocol/inspector@%s: %v\n%s", inspectorVersion, err, out)
		}
	}
	return bin
}

// TestMCPInspector drives `gymtrace mcp` with the MCP Inspector's CLI
// mode: it lists the tools and calls two, one of them wrongly, and the
// answers hold what the CLI says.
func TestMCPInspector(t *testing.T) {
	bin := inspector(t)
	files, _ := filepath.Glob("../../testdata/real-gym/s41-obs0-iso/broken-model/console/*")
	gt := gymtraceBinary(t)
	run := func(args ...string) (map[string]any, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, append(append([]string{"--cli", gt, "mcp"}, files...), args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
			t.Fatalf("inspector %v: %v: %s", args, err, stdout.String())
		}
		return m, stdout.String()
	}
	list, _ := run("--method", "tools/list")
	var names []string
	for _, tl := range list["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	for _, want := range []string{"status", "list_rollouts", "get_rollout", "get_spans", "check", "explain", "critical_path", "cohort", "groups", "preview", "recommend", "compare"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("tools/list = %v: no %s", names, want)
		}
	}
	var out, errb bytes.Buffer
	runCheck(append([]string{"--json"}, files...), &out, &errb)
	var chk checkJSON
	if err := json.Unmarshal(out.Bytes(), &chk); err != nil {
		t.Fatal(err)
	}
	st, _ := run("--method", "tools/call", "--tool-name", "status")
	sc := st["structuredContent"].(map[string]any)
	if int(sc["rollouts"].(float64)) != chk.Rollouts || int(sc["rollouts_split"].(float64)) != chk.RolloutsSplit {
		t.Errorf("status = %v, want check's %d rollouts, %d split", sc, chk.Rollouts, chk.RolloutsSplit)
	}
	id := chk.SplitRollouts[0]
	bad, text := run("--method", "tools/call", "--tool-name", "get_rollout", "--tool-arg", "rollout_id="+id[:len(id)-2])
	if bad["isError"] != true || !strings.Contains(text, id) {
		t.Errorf("get_rollout of a cut id: %s, want an error naming %s", text, id)
	}
}
