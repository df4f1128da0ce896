package receiver

import (
	"fmt"
)

// The metric and log counters read OTLP/JSON (camelCase or snake_case) and
// the Python SDK's console form of metrics, whose points sit under
// "data": {"data_points": [...]}, with the one JSON scanner: the same depth
// bound, number grammar (plus Python's NaN and Infinity) and UTF-8 repair
// as every other JSON input.

// CountMetricPointsJSON counts the data points in an OTLP/JSON
// ExportMetricsServiceRequest (or a Python SDK console metrics record).
func CountMetricPointsJSON(b []byte) (int, error) {
	return MetricPointsByNameJSON(b, nil)
}

// MetricPointsByNameJSON is MetricPointsByName for OTLP/JSON (and the Python
// SDK's console form): fn, when not nil, is called once per metric with its
// name and number of data points, and only when the whole request decoded.
func MetricPointsByNameJSON(b []byte, fn func(name []byte, points int)) (int, error) {
	type named struct {
		name   string
		points int
	}
	var (
		s     scan
		found []named
		total int
	)
	s.reset(b)
	metric := func() error {
		var name string
		points := 0
		err := obj(&s, func(k []byte) error {
			switch string(k) {
			case "name":
				v, _, err := s.str(nil)
				name = string(v)
				return err
			case "gauge", "sum", "histogram", "exponentialHistogram", "exponential_histogram", "summary", "data":
				return obj(&s, func(k []byte) error {
					if string(k) != "dataPoints" && string(k) != "data_points" {
						return s.skip()
					}
					return arr(&s, func() error { points++; return s.skip() })
				})
			}
			return s.skip()
		})
		total += points
		found = append(found, named{name, points})
		return err
	}
	err := walkJSON(&s, []pathStep{{"resourceMetrics", "resource_metrics"}, {"scopeMetrics", "scope_metrics"}, {"metrics", ""}}, metric)
	if err != nil {
		return 0, fmt.Errorf("decode otlp json metrics: %w", err)
	}
	if fn != nil {
		for _, m := range found {
			fn([]byte(m.name), m.points)
		}
	}
	return total, nil
}

// CountLogRecordsJSON counts the log records in an OTLP/JSON
// ExportLogsServiceRequest.
func CountLogRecordsJSON(b []byte) (int, error) {
	var s scan
	s.reset(b)
	n := 0
	err := walkJSON(&s, []pathStep{{"resourceLogs", "resource_logs"}, {"scopeLogs", "scope_logs"}, {"logRecords", "log_records"}},
		func() error { n++; return s.skip() })
	if err != nil {
		return 0, fmt.Errorf("decode otlp json logs: %w", err)
	}
	return n, nil
}

// pathStep names a repeated field in both spellings OTLP/JSON allows.
type pathStep [2]string

func (p pathStep) is(k []byte) bool { return string(k) == p[0] || p[1] != "" && string(k) == p[1] }

// walkJSON reads a whole document {step0: [{step1: [... {stepN: [item...]}]}]},
// skipping every other member, and calls item with the cursor on each
// element of the last level.
func walkJSON(s *scan, path []pathStep, item func() error) error {
	var level func(d int) error
	level = func(d int) error {
		return obj(s, func(k []byte) error {
			if !path[d].is(k) {
				return s.skip()
			}
			if d == len(path)-1 {
				return arr(s, item)
			}
			return arr(s, func() error { return level(d + 1) })
		})
	}
	if err := level(0); err != nil {
		return err
	}
	s.ws()
	if s.i < len(s.b) {
		return s.errorf("text after the JSON value")
	}
	return nil
}

// obj reads an object, or a null in its place.
func obj(s *scan, fn func(k []byte) error) error {
	if s.null() {
		return nil
	}
	return s.object(fn)
}

// arr reads an array, or a null in its place.
func arr(s *scan, fn func() error) error {
	if s.null() {
		return nil
	}
	return s.array(func(int) error { return fn() })
}
