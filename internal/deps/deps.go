package main
import (
 _ "github.com/charmbracelet/bubbletea"
 _ "github.com/charmbracelet/lipgloss"
 _ "github.com/charmbracelet/bubbles/viewport"
 _ "google.golang.org/grpc"
 _ "go.opentelemetry.io/proto/otlp/collector/trace/v1"
 _ "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
 _ "go.opentelemetry.io/proto/otlp/collector/logs/v1"
 _ "google.golang.org/protobuf/proto"
 _ "go.opentelemetry.io/otel/sdk/trace"
 _ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
 _ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
 _ "go.yaml.in/yaml/v3"
)
func main(){}
