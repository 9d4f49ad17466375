package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sample builds a small file with every metadata type and two tensors.
func sample(t testing.TB) []byte {
	t.Helper()
	w := NewWriter()
	w.Set("general.architecture", Str("llama"))
	w.Set("u8", Value{Type: TypeUint8, Scalar: uint8(200)})
	w.Set("i8", Value{Type: TypeInt8, Scalar: int8(-100)})
	w.Set("u16", Value{Type: TypeUint16, Scalar: uint16(60000)})
	w.Set("i16", Value{Type: TypeInt16, Scalar: int16(-30000)})
	w.Set("u32", U32(4000000000))
	w.Set("i32", I32(-2000000000))
	w.Set("f32", F32(1e-5))
	w.Set("bool", Bool(true))
	w.Set("u64", U64(1<<60))
	w.Set("i64", Value{Type: TypeInt64, Scalar: int64(-1 << 60)})
	w.Set("f64", F64(3.25))
	w.Set("strs", Strings([]string{"a", "", "ünïcode"}))
	w.Set("f32s", Float32s([]float32{1, -2.5}))
	w.Set("i32s", Int32s([]int32{1, 6, 3}))
	w.Set("nested", Value{Type: TypeArray, ElemType: TypeArray, Array: []any{
		Value{Type: TypeArray, ElemType: TypeUint8, Array: []any{uint8(1), uint8(2)}},
		Value{Type: TypeArray, ElemType: TypeString, Array: []any{"x"}},
	}})
	w.AddTensor("a.weight", TensorF32, []uint64{4, 2}, make([]byte, 32))
	w.AddTensor("b.weight", TensorQ8_0, []uint64{32}, bytes.Repeat([]byte{7}, 34))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	b := sample(t)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter()
	for _, kv := range f.Metadata {
		w.Set(kv.Key, kv.Value)
	}
	if f.Version != 3 || f.Alignment != 32 || len(f.Tensors) != 2 || len(f.Metadata) != 16 {
		t.Fatalf("parsed version %d alignment %d tensors %d keys %d", f.Version, f.Alignment, len(f.Tensors), len(f.Metadata))
	}
	for _, ti := range f.Tensors {
		if (f.DataOffset+ti.Offset)%f.Alignment != 0 {
			t.Errorf("tensor %s is not aligned", ti.Name)
		}
		w.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
	}
	var again bytes.Buffer
	if _, err := w.WriteTo(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, again.Bytes()) {
		t.Fatal("read-then-write is not byte-identical")
	}
	got, _ := f.Metadata.Get("nested")
	if inner := got.Array[1].(Value); inner.ElemType != TypeString || inner.Array[0] != "x" {
		t.Fatalf("nested array read back as %+v", got)
	}
	if v, _ := f.Metadata.Uint("u32"); v != 4000000000 {
		t.Fatalf("u32 = %d", v)
	}
	if _, err := f.Metadata.Uint("i32"); err == nil {
		t.Fatal("a negative integer read as uint without error")
	}
	if s, _ := f.Metadata.StringArray("strs"); !reflect.DeepEqual(s, []string{"a", "", "ünïcode"}) {
		t.Fatalf("strings = %q", s)
	}
	if q, _ := f.Tensor("b.weight"); q.Data[0] != 7 || len(q.Data) != 34 {
		t.Fatalf("tensor data not read back")
	}
}

func TestOpenMapsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, sample(t), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if a, _ := f.Tensor("a.weight"); len(a.Data) != 32 {
		t.Fatal("mapped tensor has wrong size")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Fatal("opening a missing file succeeded")
	}
}

// corrupt returns sample() with fn applied to a copy.
func corrupt(t *testing.T, fn func(b []byte) []byte) []byte {
	b := append([]byte(nil), sample(t)...)
	return fn(b)
}

func TestBadFiles(t *testing.T) {
	// Offsets in the sample: magic 0, version 4, tensor_count 8, kv_count 16,
	// first key length at 24.
	put64 := func(off int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b }
	}
	tensorTypeOffset := func(b []byte) int {
		// The type field of the last tensor info sits 12 bytes before the
		// data section's padding: find it from the name.
		i := bytes.LastIndex(b, []byte("b.weight"))
		return i + len("b.weight") + 4 + 8 // n_dims, one dim
	}
	tests := []struct {
		name       string
		data       []byte
		field, msg string
		offset     int64
	}{
		{"empty", []byte{}, "magic", "truncated", 0},
		{"wrong magic", corrupt(t, func(b []byte) []byte { copy(b, "GGML"); return b }), "magic", `got "GGML"`, 0},
		{"unsupported version", corrupt(t, func(b []byte) []byte { b[4] = 9; return b }), "version", "unsupported version 9", 4},
		{"absurd tensor count", corrupt(t, put64(8, 1<<62)), "tensor_count", "cannot fit", 8},
		{"absurd kv count", corrupt(t, put64(16, 1<<40)), "metadata_kv_count", "cannot fit", 16},
		{"absurd key length", corrupt(t, put64(24, 1<<50)), "metadata[0].key", "exceeds", 24},
		{"truncated in metadata", corrupt(t, func(b []byte) []byte { return b[:300] }), "", "truncated", -1},
		{"unknown tensor type", corrupt(t, func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[tensorTypeOffset(b):], 99)
			return b
		}), `tensor "b.weight" type`, "unknown tensor type 99", -1},
		{"tensor data past end", corrupt(t, func(b []byte) []byte { return b[:len(b)-10] }), `tensor "b.weight" data`, "past the end", -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.data)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FormatError", err)
			}
			if !strings.Contains(fe.Field, tc.field) || !strings.Contains(fe.Msg, tc.msg) {
				t.Fatalf("got %v, want field %q and message containing %q", err, tc.field, tc.msg)
			}
			if tc.offset >= 0 && fe.Offset != tc.offset {
				t.Fatalf("offset %d, want %d (%v)", fe.Offset, tc.offset, err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample(f))
	f.Add([]byte("GGUF"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<20 {
			return
		}
		file, err := Parse(b)
		if err != nil {
			return
		}
		for _, ti := range file.Tensors {
			if uint64(len(ti.Data)) != ti.Bytes() {
				t.Fatalf("tensor %s: %d bytes, want %d", ti.Name, len(ti.Data), ti.Bytes())
			}
		}
	})
}
