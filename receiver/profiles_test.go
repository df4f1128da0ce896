package receiver

import (
	"context"
	"net/http"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/emptypb"
)

// profilesRequest is an ExportProfilesServiceRequest (OTLP 1.9+,
// v1development) with n profiles in one scope, and a dictionary.
func profilesRequest(n int) []byte {
	var scope []byte
	for i := 0; i < n; i++ {
		var prof []byte
		prof = protowire.AppendTag(prof, 1, protowire.VarintType) // a sample type index
		prof = protowire.AppendVarint(prof, uint64(i))
		scope = protowire.AppendTag(scope, 2, protowire.BytesType)
		scope = protowire.AppendBytes(scope, prof)
	}
	var rp, req []byte
	rp = protowire.AppendTag(rp, 2, protowire.BytesType)
	rp = protowire.AppendBytes(rp, scope)
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendBytes(req, rp)
	req = protowire.AppendTag(req, 2, protowire.BytesType) // dictionary
	req = protowire.AppendBytes(req, []byte{0x0a, 0x00})
	return req
}

// TestProfilesAcceptedAndCounted sends profiles, an alpha signal, as a
// profiler pointed at gymtrace does: over OTLP/HTTP (protobuf and JSON)
// at /v1development/profiles and over gRPC's ProfilesService. Each is
// answered OK and its profiles counted.
func TestProfilesAcceptedAndCounted(t *testing.T) {
	srv, st := startServer(t, Config{}, model.Options{})
	ga, ha := srv.Addrs()
	if code, body := postHTTP(t, ha, "/v1development/profiles", mediaProto, "", profilesRequest(3)); code != http.StatusOK {
		t.Fatalf("protobuf profiles answered %d %s", code, body)
	}
	js := `{"resourceProfiles":[{"scopeProfiles":[{"profiles":[{"sampleType":[]},{}]}]},{"scopeProfiles":[{"profiles":[{}]}]}],"dictionary":{}}`
	if code, body := postHTTP(t, ha, "/v1development/profiles", mediaJSON, "", []byte(js)); code != http.StatusOK || string(body) != "{}" {
		t.Fatalf("JSON profiles answered %d %s", code, body)
	}
	var resp emptypb.Empty
	if err := dialRaw(t, ga).Invoke(context.Background(), "/"+profilesService+"/Export", &rawRequest{b: profilesRequest(2)}, &resp); err != nil {
		t.Fatalf("gRPC profiles: %v", err)
	}
	if code, _ := postHTTP(t, ha, "/v1development/profiles", mediaProto, "", []byte{0x0a, 0x05, 0x12}); code != http.StatusBadRequest {
		t.Errorf("malformed profiles answered %d, want 400", code)
	}
	if got := srv.Stats().Profiles; got != 3+3+2 {
		t.Errorf("Stats().Profiles = %d, want 8", got)
	}
	st.Sync()
	if got := st.Snapshot().Stats.Profiles; got != 8 {
		t.Errorf("snapshot counts %d profiles, want 8", got)
	}
}
