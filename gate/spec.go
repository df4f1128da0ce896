package gate

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// EnvSpanGroups is the environment variable NeMo Gym reads its spec from.
const EnvSpanGroups = "NEMO_GYM_OTEL_SPAN_GROUPS"

// Spec sources, in precedence order, as CurrentSpec reports them.
const (
	SourceFlag    = "--spec"
	SourceEnv     = EnvSpanGroups
	SourceDefault = "default"
)

// CurrentSpec finds the span_groups setting in force, in Gym's own order of
// precedence: the --spec flag, then the environment variable (env is its
// value), then telemetry.span_groups in the Gym config at gymConfigPath (when
// not empty), else the default preset. source names where the spec came
// from, e.g. "--spec" or "conf.yaml: telemetry.span_groups". The spec is
// returned as written; parse it with Registry.Parse.
func CurrentSpec(flagSpec, env, gymConfigPath string) (spec, source string, err error) {
	if strings.TrimSpace(flagSpec) != "" {
		return flagSpec, SourceFlag, nil
	}
	if strings.TrimSpace(env) != "" {
		return env, SourceEnv, nil
	}
	if gymConfigPath != "" {
		s, ok, err := configSpec(gymConfigPath)
		if err != nil {
			return "", "", err
		}
		if ok {
			return s, gymConfigPath + ": telemetry.span_groups", nil
		}
	}
	return "default", SourceDefault, nil
}

// configSpec reads telemetry.span_groups from a Gym config; ok is false when
// the file does not set it. A list value is joined with commas.
func configSpec(path string) (spec string, ok bool, err error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return "", false, fmt.Errorf("read gym config: %w", err)
	}
	var doc struct {
		Telemetry struct {
			SpanGroups yaml.Node `yaml:"span_groups"`
		} `yaml:"telemetry"`
	}
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return "", false, fmt.Errorf("gym config %s: %w", path, err)
	}
	n := &doc.Telemetry.SpanGroups
	switch n.Kind {
	case 0:
		return "", false, nil
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "", false, nil
		}
		return n.Value, true, nil
	case yaml.SequenceNode:
		var parts []string
		for _, x := range n.Content {
			if x.Kind != yaml.ScalarNode {
				return "", false, fmt.Errorf("%s:%d: telemetry.span_groups entries must be strings", path, x.Line)
			}
			parts = append(parts, x.Value)
		}
		return strings.Join(parts, ","), true, nil
	}
	return "", false, fmt.Errorf("%s:%d: %w", path, n.Line, errSpecType)
}

var errSpecType = errors.New("telemetry.span_groups must be a string or a list of group names")
