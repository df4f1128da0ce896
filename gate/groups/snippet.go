package groups

import (
	"strconv"
	"strings"
)

// TelemetryYAML returns the telemetry block of a Gym config that selects
// spec, ready to paste. The spec is quoted so that YAML reads it as one
// string whatever it holds.
func TelemetryYAML(spec string) string {
	return "telemetry:\n  enabled: true\n  span_groups: " + strconv.Quote(spec) + "\n"
}

// EnvLine returns the environment assignment that selects spec, quoted for a
// POSIX shell when it holds anything but names and commas.
func EnvLine(spec string) string {
	return EnvSpanGroups + "=" + shellQuote(spec)
}

func shellQuote(s string) string {
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == ',' || c == '-' || c == '.') {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
