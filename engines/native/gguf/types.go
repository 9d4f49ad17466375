// Package gguf reads and writes GGUF v3 files: the header, typed metadata
// (every value type, arrays included), tensor infos, alignment and tensor data.
//
// The reader never trusts a count or an offset: every length is checked
// against the bytes that remain before anything is allocated, and every
// failure is a *FormatError naming the field and its byte offset.
package gguf

import (
	"fmt"
)

// Magic is the four bytes every GGUF file starts with.
const Magic = "GGUF"

// Version is the GGUF version this package writes. It reads 2 and 3.
const Version = 3

// DefaultAlignment is used when general.alignment is absent.
const DefaultAlignment = 32

// ValueType is the type tag of a metadata value.
type ValueType uint32

// Metadata value types, as numbered by the GGUF specification.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = map[ValueType]string{
	TypeUint8: "uint8", TypeInt8: "int8", TypeUint16: "uint16", TypeInt16: "int16",
	TypeUint32: "uint32", TypeInt32: "int32", TypeFloat32: "float32", TypeBool: "bool",
	TypeString: "string", TypeArray: "array", TypeUint64: "uint64", TypeInt64: "int64",
	TypeFloat64: "float64",
}

func (t ValueType) String() string {
	if s, ok := valueTypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("value_type(%d)", uint32(t))
}

// fixedSize is the encoded size of a scalar type, 0 for string and array.
func (t ValueType) fixedSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// TensorType is a ggml tensor element type.
type TensorType uint32

// The tensor types this package knows. Only those with a layout in
// tensor.Layouts can be read as data; others are named in errors.
const (
	TensorF32  TensorType = 0
	TensorF16  TensorType = 1
	TensorQ4_0 TensorType = 2
	TensorQ4_1 TensorType = 3
	TensorQ5_0 TensorType = 6
	TensorQ5_1 TensorType = 7
	TensorQ8_0 TensorType = 8
	TensorQ8_1 TensorType = 9
	TensorQ2K  TensorType = 10
	TensorQ3K  TensorType = 11
	TensorQ4K  TensorType = 12
	TensorQ5K  TensorType = 13
	TensorQ6K  TensorType = 14
	TensorQ8K  TensorType = 15
	TensorBF16 TensorType = 30
)

// blockInfo gives elements per block and bytes per block.
type blockInfo struct {
	name  string
	elems int
	bytes int
}

var tensorTypes = map[TensorType]blockInfo{
	TensorF32:  {"F32", 1, 4},
	TensorF16:  {"F16", 1, 2},
	TensorBF16: {"BF16", 1, 2},
	TensorQ4_0: {"Q4_0", 32, 18},
	TensorQ4_1: {"Q4_1", 32, 20},
	TensorQ5_0: {"Q5_0", 32, 22},
	TensorQ5_1: {"Q5_1", 32, 24},
	TensorQ8_0: {"Q8_0", 32, 34},
	TensorQ8_1: {"Q8_1", 32, 36},
	TensorQ2K:  {"Q2_K", 256, 84},
	TensorQ3K:  {"Q3_K", 256, 110},
	TensorQ4K:  {"Q4_K", 256, 144},
	TensorQ5K:  {"Q5_K", 256, 176},
	TensorQ6K:  {"Q6_K", 256, 210},
	TensorQ8K:  {"Q8_K", 256, 292},
}

func (t TensorType) String() string {
	if b, ok := tensorTypes[t]; ok {
		return b.name
	}
	return fmt.Sprintf("tensor_type(%d)", uint32(t))
}

// Known reports whether the type's block layout is known, so its size can
// be computed.
func (t TensorType) Known() bool { _, ok := tensorTypes[t]; return ok }

// BlockSize is the number of elements in one block of t.
func (t TensorType) BlockSize() int { return tensorTypes[t].elems }

// BlockBytes is the encoded size of one block of t.
func (t TensorType) BlockBytes() int { return tensorTypes[t].bytes }

// RowBytes is the encoded size of n elements of t. n must be a multiple of
// the block size.
func (t TensorType) RowBytes(n int) int {
	b := tensorTypes[t]
	return n / b.elems * b.bytes
}

// ParseTensorType maps a name such as "q8_0" or "F16" to its type.
func ParseTensorType(name string) (TensorType, error) {
	for t, b := range tensorTypes {
		if equalFold(b.name, name) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown tensor type %q", name)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// FormatError is a malformed file: what was wrong, which field, at which
// byte offset.
type FormatError struct {
	Offset int64
	Field  string
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("gguf: %s at byte offset %d: %s", e.Field, e.Offset, e.Msg)
}
