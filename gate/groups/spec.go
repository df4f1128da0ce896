package groups

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// EnvSpanGroups is the environment variable NeMo Gym reads its spec from.
const EnvSpanGroups = "NEMO_GYM_OTEL_SPAN_GROUPS"

// EnvLensSpanGroups is nemo-lens's own variable, which Gym reads when
// EnvSpanGroups is unset or blank.
const EnvLensSpanGroups = "NEMO_LENS_SPAN_GROUPS"

// Spec sources, in precedence order, as CurrentSpec reports them.
const (
	SourceFlag    = "--spec"
	SourceEnv     = EnvSpanGroups
	SourceLensEnv = EnvLensSpanGroups
	SourceDefault = "default"
)

// FindSpec finds the span_groups setting in force as Gym does, after the
// --spec flag (the tool's own override): NEMO_GYM_OTEL_SPAN_GROUPS, then
// telemetry.span_groups of the Gym config at gymConfigPath (when given),
// then NEMO_LENS_SPAN_GROUPS, else the default preset. getenv reads the
// environment (os.Getenv).
//
// The order is Gym's: its orchestrator copies the config's value into
// NEMO_GYM_OTEL_SPAN_GROUPS with setdefault before it starts the servers, and
// nemo-lens reads that variable first, NEMO_LENS_SPAN_GROUPS only when it is
// blank. So a variable set by hand wins over the YAML, while a config, even
// one that leaves span_groups out (Gym's schema defaults it to "default"),
// hides NEMO_LENS_SPAN_GROUPS; a blank YAML value does not. Values are
// compared trimmed: a blank one counts as unset.
//
// source names where the spec came from, e.g. "--spec", "FILE:
// telemetry.span_groups" or "default". A config Gym would refuse (a
// span_groups that is a list, null, a number or a boolean; a telemetry that
// is not a mapping) is an error naming file:line and Gym's reason, whatever
// the environment holds, since Gym validates the file first. The spec
// is returned as written; resolve it with Registry.Resolve.
func FindSpec(flagSpec string, getenv func(string) string, gymConfigPath string) (spec, source string, err error) {
	if strings.TrimSpace(flagSpec) != "" {
		return flagSpec, SourceFlag, nil
	}
	// Gym validates its config whatever the environment says: a config it
	// refuses stops the run before any variable is read.
	var cfg string
	var cfgSet bool
	if gymConfigPath != "" {
		if cfg, cfgSet, err = configSpec(gymConfigPath); err != nil {
			return "", "", err
		}
	}
	if v := getenv(EnvSpanGroups); strings.TrimSpace(v) != "" {
		return v, SourceEnv, nil
	}
	if gymConfigPath != "" {
		s, set := cfg, cfgSet
		switch {
		case !set:
			src := gymConfigPath + ": telemetry.span_groups unset (Gym's default)"
			if strings.TrimSpace(getenv(EnvLensSpanGroups)) != "" {
				src += "; it hides " + EnvLensSpanGroups
			}
			return "default", src, nil
		case strings.TrimSpace(s) != "":
			return s, gymConfigPath + ": telemetry.span_groups", nil
		}
		// Blank: Gym exports it blank, and nemo-lens falls through.
	}
	if v := getenv(EnvLensSpanGroups); strings.TrimSpace(v) != "" {
		return v, SourceLensEnv, nil
	}
	return "default", SourceDefault, nil
}

// ErrGymConfig is wrapped by FindSpec for a config Gym's own schema
// (TelemetryConfig) refuses, so Gym would not start.
var ErrGymConfig = errors.New("Gym refuses the config")

// configSpec reads telemetry.span_groups from a Gym config as Gym's
// TelemetryConfig validates it; set is false when the file does not set it.
func configSpec(path string) (spec string, set bool, err error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return "", false, fmt.Errorf("read gym config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return "", false, fmt.Errorf("gym config %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return "", false, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return "", false, nil // not a Gym config mapping: nothing to read
	}
	tel := mappingValue(root, "telemetry")
	switch {
	case tel == nil || tel.Kind == yaml.ScalarNode && tel.Tag == "!!null":
		return "", false, nil // no block: Gym's defaults
	case tel.Kind != yaml.MappingNode:
		return "", false, fmt.Errorf("%s:%d: telemetry is %s: %w (TelemetryConfig: \"Input should be a valid dictionary or instance of TelemetryConfig\") and does not start",
			path, tel.Line, yamlKind(tel), ErrGymConfig)
	}
	v := mappingValue(tel, "span_groups")
	if v == nil {
		return "", false, nil
	}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!str" && !(v.Style == 0 && yaml11Bool[v.Value]) {
		return v.Value, true, nil
	}
	return "", false, fmt.Errorf("%s:%d: telemetry.span_groups is %s: %w (TelemetryConfig: \"Input should be a valid string\") and does not start; "+
		"write one comma-separated string, e.g. span_groups: \"default,sandbox\"", path, v.Line, yamlKind(v), ErrGymConfig)
}

// yaml11Bool are the plain scalars Gym's YAML loader (YAML 1.1, as
// OmegaConf reads it) takes for booleans where YAML 1.2 sees strings.
var yaml11Bool = map[string]bool{
	"yes": true, "Yes": true, "YES": true, "no": true, "No": true, "NO": true,
	"on": true, "On": true, "ON": true, "off": true, "Off": true, "OFF": true,
}

// mappingValue returns the value of key in a mapping node, nil if absent.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// yamlKind names what a non-string YAML value is, as a user sees it.
func yamlKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a YAML list"
	case yaml.MappingNode:
		return "a YAML mapping"
	case yaml.AliasNode:
		return "a YAML alias"
	}
	if n.Style == 0 && yaml11Bool[n.Value] {
		return "a boolean"
	}
	switch n.Tag {
	case "!!null":
		return "null"
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	}
	return "a YAML " + strings.TrimPrefix(n.Tag, "!!")
}
