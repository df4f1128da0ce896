// Package groups knows NeMo Gym's span groups: the registry of groups and
// presets of each Gym variant (embedded files under variants/), the
// span_groups spec parser and Gym's own resolution of a spec, the
// classifier (span → group), variant detection from a capture, groups files
// that add groups, presets and rules, and the config snippets that set a
// spec.
//
// groups imports model and a YAML parser only: never another gate package,
// receiver, tui or the OpenTelemetry SDK.
package groups
