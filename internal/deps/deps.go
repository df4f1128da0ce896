// Package deps pins the project's module requirements while packages are
// being built; it is removed once every module is imported for real.
package deps

import (
	_ "github.com/charmbracelet/bubbles/viewport"
	_ "github.com/charmbracelet/bubbletea"
	_ "github.com/charmbracelet/lipgloss"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "go.opentelemetry.io/otel/sdk/metric"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	_ "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	_ "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	_ "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	_ "go.yaml.in/yaml/v3"
	_ "google.golang.org/grpc"
	_ "google.golang.org/protobuf/encoding/protowire"
	_ "github.com/charmbracelet/bubbles/key"
	_ "github.com/charmbracelet/bubbles/textinput"
	_ "github.com/charmbracelet/bubbles/help"
	_ "github.com/aymanbagabas/go-osc52/v2"
)
