package receiver

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Profiles (OTLP 1.9+, alpha, at /v1development/profiles and the
// ProfilesService of opentelemetry.proto.collector.profiles.v1development)
// are accepted and counted, not stored or recorded: a profiler pointed at
// gymtrace logs no errors, and the count shows it is there.

// signalProfiles is the profiles export.
const signalProfiles signal = 3

// profilesService is the gRPC service name of the profiles export.
const profilesService = "opentelemetry.proto.collector.profiles.v1development.ProfilesService"

// CountProfiles counts the profiles of an OTLP ExportProfilesServiceRequest
// (protobuf wire bytes): resource_profiles (1), scope_profiles (2),
// profiles (2).
func CountProfiles(b []byte) (int, error) {
	return countNested(b, []protowire.Number{1, 2, 2}, []string{"resource_profiles", "scope_profiles", "profiles"})
}

// CountProfilesJSON counts the profiles of an OTLP/JSON profiles request.
func CountProfilesJSON(b []byte) (int, error) {
	var s scan
	s.reset(b)
	n := 0
	err := walkJSON(&s, []pathStep{{"resourceProfiles", "resource_profiles"}, {"scopeProfiles", "scope_profiles"}, {"profiles", ""}},
		func() error { n++; return s.skip() })
	if err != nil {
		return 0, fmt.Errorf("decode otlp json profiles: %w", err)
	}
	return n, nil
}

// exportProfiles counts a profiles request.
func (s *Server) exportProfiles(body []byte, f wireFormat) error {
	var (
		n   int
		err error
	)
	if f == formatJSON {
		n, err = CountProfilesJSON(body)
	} else {
		n, err = CountProfiles(body)
	}
	if err != nil {
		return &inputError{err}
	}
	s.profiles.Add(int64(n))
	s.store.CountProfiles(int64(n))
	return nil
}
