package golden

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// goldenDir holds the vectors written by tests/golden/builders.py, relative
// to this package's directory (the working directory of go test).
var goldenDir = filepath.Join("..", "..", "..", "testdata", "golden")

// indexEntry is one vector listed in index.json.
type indexEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func readIndex(t *testing.T) []indexEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldenDir, "index.json"))
	if err != nil {
		t.Fatalf("read index: %v", err)
	}
	var index struct {
		Vectors []indexEntry `json:"vectors"`
	}
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatalf("parse index.json: %v", err)
	}
	return index.Vectors
}

func readVector(t *testing.T, name, ext string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldenDir, name+ext))
	if err != nil {
		t.Fatalf("read vector: %v", err)
	}
	return data
}

// parseJSON decodes data as a generic JSON value, so that two ProtoJSON
// documents compare regardless of whitespace, key order and number spelling.
func parseJSON(t *testing.T, what string, data []byte) any {
	t.Helper()
	var value any
	if err := json.Unmarshal(data, &value); err != nil {
		t.Fatalf("parse %s as JSON: %v\n%s", what, err, data)
	}
	return value
}

// TestIndexMatchesBuilders checks that index.json and Vectors name the same
// vectors: a vector missing on either side fails.
func TestIndexMatchesBuilders(t *testing.T) {
	listed := map[string]bool{}
	for _, entry := range readIndex(t) {
		if listed[entry.Name] {
			t.Errorf("index.json lists %q twice", entry.Name)
		}
		listed[entry.Name] = true
		if _, ok := Vectors[entry.Name]; !ok {
			t.Errorf("index.json lists %q but Go has no builder for it", entry.Name)
		}
	}
	var unlisted []string
	for name := range Vectors {
		if !listed[name] {
			unlisted = append(unlisted, name)
		}
	}
	slices.Sort(unlisted)
	for _, name := range unlisted {
		t.Errorf("Go builds %q but index.json does not list it", name)
	}
}

// TestVectors checks every vector in index.json against the message Go
// builds for it: binary, base64 and ProtoJSON encodings, and decoding.
func TestVectors(t *testing.T) {
	for _, entry := range readIndex(t) {
		t.Run(entry.Name, func(t *testing.T) {
			build, ok := Vectors[entry.Name]
			if !ok {
				t.Fatalf("no Go builder for %q", entry.Name)
			}
			checkVector(t, entry, build())
		})
	}
}

func checkVector(t *testing.T, entry indexEntry, built proto.Message) {
	desc := built.ProtoReflect().Descriptor()
	if got := string(desc.FullName()); got != entry.Type {
		t.Errorf("built a %s, index.json says %s", got, entry.Type)
	}
	reason, sortFields := goFieldOrderDiffers[entry.Name]

	// (a) Deterministic binary serialization is byte-identical to .bin, or
	// for the vectors in goFieldOrderDiffers differs from it only in the
	// order of the fields.
	wantBin := readVector(t, entry.Name, ".bin")
	gotBin := marshal(t, built)
	if sortFields {
		t.Logf("Go writes these fields in another order than .bin (%s): comparing with fields sorted by number", reason)
		if bytes.Equal(gotBin, wantBin) {
			t.Errorf("Go serialization equals %s.bin: remove it from goFieldOrderDiffers", entry.Name)
		}
		gotBin = sortedByNumber(t, gotBin, desc)
	}
	if !bytes.Equal(gotBin, wantBin) {
		t.Errorf("binary differs from %s.bin\n got: %x\nwant: %x", entry.Name, gotBin, wantBin)
	}

	// (b) Its standard base64 equals .b64.
	wantB64 := strings.TrimSpace(string(readVector(t, entry.Name, ".b64")))
	if gotB64 := base64.StdEncoding.EncodeToString(gotBin); gotB64 != wantB64 {
		t.Errorf("base64 differs from %s.b64\n got: %s\nwant: %s", entry.Name, gotB64, wantB64)
	}

	// (c) ProtoJSON equals .json as JSON values.
	wantJSON := readVector(t, entry.Name, ".json")
	gotJSON, err := protojson.Marshal(built)
	if err != nil {
		t.Fatalf("protojson marshal: %v", err)
	}
	if !reflect.DeepEqual(parseJSON(t, "protojson output", gotJSON), parseJSON(t, entry.Name+".json", wantJSON)) {
		t.Errorf("ProtoJSON differs from %s.json\n got: %s\nwant: %s", entry.Name, gotJSON, wantJSON)
	}

	// (d) Both files decode to the built message. A vector in
	// goFieldOrderDiffers decodes to an Any whose value holds the .bin field
	// order, so it is compared by its serialization with fields sorted by
	// number instead of by proto.Equal.
	equal := proto.Equal
	if sortFields {
		equal = func(x, y proto.Message) bool {
			return bytes.Equal(sortedByNumber(t, marshal(t, x), desc), sortedByNumber(t, marshal(t, y), desc))
		}
	}
	fromBin := newOfType(built)
	if err := proto.Unmarshal(wantBin, fromBin); err != nil {
		t.Errorf("unmarshal %s.bin: %v", entry.Name, err)
	} else if !equal(fromBin, built) {
		t.Errorf("%s.bin decodes to a different message\n got: %v\nwant: %v", entry.Name, fromBin, built)
	}
	fromJSON := newOfType(built)
	if err := protojson.Unmarshal(wantJSON, fromJSON); err != nil {
		t.Errorf("protojson unmarshal %s.json: %v", entry.Name, err)
	} else if !equal(fromJSON, built) {
		t.Errorf("%s.json decodes to a different message\n got: %v\nwant: %v", entry.Name, fromJSON, built)
	}
}

// marshal is the deterministic binary serialization of m.
func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatalf("marshal %s: %v", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return data
}

// sortedByNumber is sortFieldsByNumber, failing the test on error.
func sortedByNumber(t *testing.T, data []byte, desc protoreflect.MessageDescriptor) []byte {
	t.Helper()
	sorted, err := sortFieldsByNumber(data, desc)
	if err != nil {
		t.Fatalf("sort fields: %v", err)
	}
	return sorted
}

// newOfType returns a new, empty message of the same type as m.
func newOfType(m proto.Message) proto.Message {
	return m.ProtoReflect().Type().New().Interface()
}
