package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliCommand is one command as the shared-setup tests run it.
type cliCommand struct {
	name string
	run  func(args []string, o, e *bytes.Buffer) int
	// args is a valid line's arguments (files, rollout ids); need are the
	// flags the command cannot run without; ok are flags of a run that
	// succeeds, nil for a command that would not return (serve, demo).
	args, need, ok []string
	// setting names the flag holding the span_groups setting in force,
	// read with --gym-config; what names a what-if spec flag.
	setting, what string
}

func cliCommands(t *testing.T) []cliCommand {
	capture := gateCaptures + "all.console.jsonl"
	// An error case that ran would block serve and demo: the deadline
	// ends them instead.
	ctx := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		return c
	}
	listen := []string{"--headless", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}
	return []cliCommand{
		{name: "check", run: checkCmd, args: []string{capture}, ok: []string{"--json"}, setting: "spec"},
		{name: "preview", run: previewCmd, args: []string{capture}, need: []string{"--spec", "per_rollout"}, ok: []string{"--json"}, setting: "current"},
		{name: "open", run: func(a []string, o, e *bytes.Buffer) int { return runOpen(a, o, e, false) },
			args: []string{capture}, ok: []string{"--text"}, setting: "spec"},
		{name: "export", run: exportCmd, args: []string{capture}, need: []string{"-o", "-"}, ok: []string{"--where", "id=s3-r0001"}, what: "spec"},
		{name: "diff", run: diffCmd, args: []string{"s3-r0000", "s3-r0001", capture}, ok: []string{"--json"}, what: "a-spec"},
		{name: "groups", run: groupsCmd, ok: []string{"--json"}},
		{name: "serve", run: func(a []string, o, e *bytes.Buffer) int {
			return runServe(ctx(), append(append([]string(nil), listen...), a...), o, e, false, nil)
		}, setting: "spec"},
		{name: "demo", run: func(a []string, o, e *bytes.Buffer) int {
			return runDemo(ctx(), append(append([]string(nil), listen...), a...), o, e, false)
		}},
	}
}

func line(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestFlagsAfterArguments: every command reads its flags wherever they
// are in the line; a run with them after the files prints what it prints
// with them first.
func TestFlagsAfterArguments(t *testing.T) {
	for _, c := range cliCommands(t) {
		if c.ok == nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			codeA, outA, errA := runGateCmd(t, c.run, line(c.need, c.ok, c.args)...)
			codeB, outB, errB := runGateCmd(t, c.run, line(c.args, c.need, c.ok)...)
			if codeA == exitUsage || codeB == exitUsage {
				t.Fatalf("exit %d / %d: %s / %s", codeA, codeB, errA, errB)
			}
			if codeA != codeB || outA != outB || outA == "" {
				t.Errorf("flags first: exit %d, %d bytes; flags last: exit %d, %d bytes; want the same, not empty", codeA, len(outA), codeB, len(outB))
			}
			if c.name == "groups" {
				return
			}
			// A flag among the arguments is read too.
			mid := line(c.args[:len(c.args)-1], c.need, c.ok, c.args[len(c.args)-1:])
			if code, out, errOut := runGateCmd(t, c.run, mid...); code != codeA || out != outA {
				t.Errorf("flags between the arguments: exit %d (%s)", code, errOut)
			}
		})
	}
}

// TestSetupErrors: the problems every command shares are worded alike,
// "gymtrace CMD: …", and exit 2, with the offending flag after the files.
func TestSetupErrors(t *testing.T) {
	dir := t.TempDir()
	badGroups := filepath.Join(dir, "groups.yaml")
	if err := os.WriteFile(badGroups, []byte("groups:\n  - name: Bad\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badCfg := filepath.Join(dir, "gym.yaml")
	if err := os.WriteFile(badCfg, []byte("telemetry:\n  enabled: true\n  span_groups: [server, http_client]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type problem struct {
		name  string
		flags func(c cliCommand) []string // nil: the command has no such flag
		want  func(c cliCommand) string
	}
	always := func(f ...string) func(cliCommand) []string { return func(cliCommand) []string { return f } }
	problems := []problem{
		{"bad flag", always("--bogus"), func(cliCommand) string { return "flag provided but not defined: -bogus" }},
		{"unknown variant", always("--gym-version", "G9"), func(cliCommand) string {
			return `--gym-version: unknown Gym variant "G9": want one of G1, G1c, G2, G3, or a Gym version`
		}},
		{"bad groups file", always("--groups", badGroups), func(cliCommand) string {
			return "--groups: " + badGroups + ":2:5: missing description\n" + badGroups + `:2:11: group name "Bad" must be snake_case`
		}},
		{"config Gym refuses", func(c cliCommand) []string {
			if c.setting == "" {
				return nil
			}
			return []string{"--gym-config", badCfg}
		}, func(cliCommand) string {
			return badCfg + `:3: telemetry.span_groups is a YAML list: Gym refuses the config (TelemetryConfig: "Input should be a valid string")`
		}},
		{"spec Gym refuses", func(c cliCommand) []string {
			f := c.what
			if c.setting == "spec" && c.name != "check" {
				f = "spec"
			}
			if f == "" {
				return nil
			}
			return []string{"--gym-version", "G1", "--" + f, "default,nosuch"}
		}, func(c cliCommand) string {
			f := c.what
			if f == "" {
				f = "spec"
			}
			return `span_groups "default,nosuch" from --` + f + `: Gym refuses this spec and switches telemetry off in every process (no spans at all): Unknown span group or preset: 'nosuch'.`
		}},
		{"spec that leaves nothing on", func(c cliCommand) []string {
			f := c.what
			if c.setting == "spec" && c.name != "check" {
				f = "spec"
			}
			if f == "" {
				return nil
			}
			return []string{"--gym-version", "G3", "--" + f, "nosuch"}
		}, func(c cliCommand) string {
			f := c.what
			if f == "" {
				f = "spec"
			}
			return `span_groups "nosuch" from --` + f + `: Gym drops "nosuch" with a warning and applies the rest: no group is left on`
		}},
	}
	for _, c := range cliCommands(t) {
		for _, p := range problems {
			flags := p.flags(c)
			if flags == nil {
				continue
			}
			t.Run(c.name+"/"+p.name, func(t *testing.T) {
				code, out, errOut := runGateCmd(t, c.run, line(c.args, c.need, flags)...)
				want := "gymtrace " + c.name + ": " + p.want(c)
				if code != exitUsage || !strings.Contains(errOut, want) {
					t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, errOut, want)
				}
				if out != "" {
					t.Errorf("stdout %q, want nothing", out)
				}
				// The problem comes after the usage, if that is shown.
				if u := strings.Index(errOut, "usage: "); u > strings.Index(errOut, want) {
					t.Errorf("the usage follows the problem:\n%s", errOut)
				}
			})
		}
		t.Run(c.name+"/help", func(t *testing.T) {
			code, out, errOut := runGateCmd(t, c.run, line(c.args, []string{"-h"})...)
			if code != exitOK || !strings.HasPrefix(out, "usage: gymtrace ") || errOut != "" {
				t.Errorf("-h: exit %d, stdout %.80q, stderr %.80q; want 0 and the usage on stdout", code, out, errOut)
			}
		})
	}
}

// TestSpecAsReport: where what Gym does with the spec is the answer (check's
// advice, preview's what-if), a spec Gym refuses is reported, not an error.
func TestSpecAsReport(t *testing.T) {
	capture := gateCaptures + "all.console.jsonl"
	code, out, errOut := runGateCmd(t, checkCmd, capture, "--gym-version", "G1", "--spec", "default,nosuch")
	if code == exitUsage || !strings.Contains(out, `note: spec "default,nosuch" (--spec): Gym refuses this spec and switches telemetry off in every process`) {
		t.Errorf("check: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runGateCmd(t, previewCmd, capture, "--gym-version", "G1", "--spec", "default,nosuch")
	if code != exitOK || !strings.Contains(out, "Gym refuses this spec and switches telemetry off in every process") {
		t.Errorf("preview: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Names Gym drops (G2 on) are warned about, the rest applies.
	code, _, errOut = runGateCmd(t, exportCmd, capture, "-o", filepath.Join(t.TempDir(), "out.jsonl"), "--gym-version", "G3", "--spec", "default,nosuch")
	if code != exitOK || !strings.Contains(errOut, `gymtrace export: span_groups "default,nosuch" from --spec: Gym drops "nosuch" with a warning and applies the rest`) {
		t.Errorf("export: exit %d, stderr %q", code, errOut)
	}
}
