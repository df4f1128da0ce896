package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestHelp runs the real binary: help asked for goes to stdout with exit
// 0 (so `gymtrace help | less` shows it), a command's help is its own
// usage, and an unknown command or topic is a usage error on stderr.
func TestHelp(t *testing.T) {
	bin := gymtraceBinary(t)
	run := func(args ...string) (code int, stdout, stderr string) {
		t.Helper()
		var o, e bytes.Buffer
		c := exec.Command(bin, args...)
		c.Stdout, c.Stderr = &o, &e
		err := c.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			t.Fatalf("%v: %v", args, err)
		}
		return code, o.String(), e.String()
	}
	list := func(out string) bool {
		for _, c := range commands {
			if !strings.Contains(out, "\n  "+c.name+" ") {
				return false
			}
		}
		return strings.HasPrefix(out, "usage: gymtrace [command]")
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		if code, out, errOut := run(args...); code != exitOK || !list(out) || errOut != "" {
			t.Errorf("%q: exit %d, stdout %.60q, stderr %.60q; want 0 and the command list on stdout", args, code, out, errOut)
		}
	}
	for _, c := range commands {
		code, out, errOut := run("help", c.name)
		if code != exitOK || !strings.HasPrefix(out, "usage: gymtrace ") || !strings.Contains(out, c.name) || list(out) || errOut != "" {
			t.Errorf("help %s: exit %d, stdout %.60q, stderr %.60q; want 0 and its usage on stdout", c.name, code, out, errOut)
		}
		if code2, out2, _ := run(c.name, "-h"); code2 != code || out2 != out {
			t.Errorf("%s -h differs from help %s:\n%s\n---\n%s", c.name, c.name, out2, out)
		}
	}
	if code, out, _ := run("help", "demo"); code != exitOK || !strings.Contains(out, "-rollouts") {
		t.Errorf("help demo: exit %d, does not list demo's flags:\n%s", code, out)
	}
	if code, out, errOut := run("help", "filters"); code != exitOK || !strings.Contains(out, "--where and the TUI's / filter") || errOut != "" {
		t.Errorf("help filters: exit %d, stdout %.60q, stderr %.60q", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "nosuch"}, `gymtrace help: no command or topic "nosuch"`},
		{[]string{"nosuch"}, `gymtrace: unknown command "nosuch"`},
		{[]string{"help", "demo", "open"}, `gymtrace help: one topic at a time`},
	} {
		if code, out, errOut := run(tc.args...); code != exitUsage || out != "" || !strings.HasPrefix(errOut, tc.want) {
			t.Errorf("%q: exit %d, stdout %.60q, stderr %.80q; want 2 and %q on stderr", tc.args, code, out, errOut, tc.want)
		}
	}
}
