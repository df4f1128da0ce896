package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaseFolder: every command that reads captures takes a case folder
// as --baseline does (its console/ files, not what sits beside them), and
// answers as it answers for the files themselves.
func TestCaseFolder(t *testing.T) {
	dir := filepath.Join(realGym, "s41-obs0-leak/all")
	files := realGymCase(t, "s41-obs0-leak/all")
	for _, c := range []struct {
		name string
		run  func([]string, *bytes.Buffer, *bytes.Buffer) int
		args []string
	}{
		{"check", checkCmd, []string{"--json"}},
		{"preview", previewCmd, []string{"--spec", "per_rollout", "--json"}},
		{"open", func(a []string, o, e *bytes.Buffer) int { return runOpen(a, o, e, false) }, []string{"--text"}},
		{"path", func(a []string, o, e *bytes.Buffer) int { return runPath(a, o, e) }, []string{"--json", "~cb96ed7b/08c4d535f0104882"}},
		{"export", exportCmd, []string{"-o", "-"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantCode, want, wantErr := runGateCmd(t, c.run, append(append([]string(nil), c.args...), files...)...)
			code, got, gotErr := runGateCmd(t, c.run, append(append([]string(nil), c.args...), dir)...)
			if c.name == "export" {
				// Spans within a rollout come out in the order the store
				// placed them, which depends on how reading was batched:
				// the count is what must agree.
				got, want = "", ""
			}
			if code != wantCode || got != want || gotErr != wantErr {
				t.Errorf("%s %s: exit %d, stderr %q, stdout %d bytes; with its files exit %d, stderr %q, stdout %d bytes (equal: %v)",
					c.name, dir, code, gotErr, len(got), wantCode, wantErr, len(want), got == want)
			}
			if code != exitOK && code != exitBroken {
				t.Errorf("%s: exit %d: %s", c.name, code, gotErr)
			}
		})
	}
	// A folder without files, and a path that is not there: one error,
	// naming the path once.
	empty := t.TempDir()
	if err := os.Mkdir(filepath.Join(empty, ".hidden"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{empty, "gymtrace check: " + empty + ": the folder holds no files\n"},
		{filepath.Join(empty, "nosuch"), "gymtrace check: open " + filepath.Join(empty, "nosuch") + ": no such file or directory\n"},
	} {
		code, out, errOut := runGateCmd(t, checkCmd, tc.path)
		if code != exitUsage || out != "" || errOut != tc.want || strings.Count(errOut, tc.path) != 1 {
			t.Errorf("check %s: exit %d, stdout %q, stderr %q; want 2 and %q", tc.path, code, out, errOut, tc.want)
		}
	}
}
