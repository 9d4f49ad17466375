package tensor

import (
	"fmt"
	"unsafe"

	"github.com/fakhq/fak/engines/native/gguf"
)

// Matrix is a weight matrix of Rows rows, each Cols elements of Type, laid
// out row after row as in a GGUF tensor with dims [Cols, Rows]. Data may
// alias a memory-mapped file.
type Matrix struct {
	Name       string
	Type       gguf.TensorType
	Rows, Cols int
	Data       []byte
	f32        []float32
}

// NewMatrix wraps encoded data as a matrix, checking its size and type.
func NewMatrix(name string, typ gguf.TensorType, rows, cols int, data []byte) (*Matrix, error) {
	if !Supported(typ) {
		return nil, fmt.Errorf("tensor %s: type %s is not supported by the native engine (supported: F32, F16, BF16, Q8_0, Q4_0)", name, typ)
	}
	if cols%typ.BlockSize() != 0 {
		return nil, fmt.Errorf("tensor %s: row of %d is not a whole number of %s blocks", name, cols, typ)
	}
	if want := rows * typ.RowBytes(cols); len(data) != want {
		return nil, fmt.Errorf("tensor %s: %d bytes, want %d for %dx%d %s", name, len(data), want, rows, cols, typ)
	}
	m := &Matrix{Name: name, Type: typ, Rows: rows, Cols: cols, Data: data}
	if typ == gguf.TensorF32 {
		if uintptr(unsafe.Pointer(unsafe.SliceData(data)))%4 != 0 {
			data = append([]byte(nil), data...)
			m.Data = data
		}
		m.f32 = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(data))), rows*cols)
	}
	return m, nil
}

// RowBytes is the encoded size of one row.
func (m *Matrix) RowBytes() int { return m.Type.RowBytes(m.Cols) }

// Quantized reports whether dot products take Q8-quantised activations.
func (m *Matrix) Quantized() bool {
	return m.Type == gguf.TensorQ8_0 || m.Type == gguf.TensorQ4_0
}

// DecodeRow dequantises row r into dst (Cols long).
func (m *Matrix) DecodeRow(r int, dst []float32) {
	if m.f32 != nil {
		copy(dst, m.f32[r*m.Cols:(r+1)*m.Cols])
		return
	}
	rb := m.RowBytes()
	if err := Decode(m.Type, m.Data[r*rb:(r+1)*rb], dst[:m.Cols]); err != nil {
		panic(err) // types are checked in NewMatrix
	}
}

// Vec is one activation vector prepared for matrix products: the float32
// values and, when a quantised weight needs them, their Q8 blocks.
type Vec struct {
	F []float32
	Q []Q8Block
}

// Prepare quantises v.F for quantised weights. It must be called after F
// changes and before MulVec with a quantised matrix.
func (v *Vec) Prepare() {
	n := len(v.F) / QK
	if cap(v.Q) < n {
		v.Q = make([]Q8Block, n)
	}
	v.Q = v.Q[:n]
	QuantizeQ8(v.F, v.Q)
}

// RowDot returns the dot product of row r with x.
func (m *Matrix) RowDot(r int, x *Vec) float32 {
	switch m.Type {
	case gguf.TensorF32:
		return dotF32(m.f32[r*m.Cols:(r+1)*m.Cols], x.F)
	case gguf.TensorF16:
		rb := m.RowBytes()
		return dotF16(m.Data[r*rb:(r+1)*rb], x.F)
	case gguf.TensorBF16:
		rb := m.RowBytes()
		return dotBF16(m.Data[r*rb:(r+1)*rb], x.F)
	case gguf.TensorQ8_0:
		rb := m.RowBytes()
		return dotQ8(m.Data[r*rb:(r+1)*rb], x.Q)
	case gguf.TensorQ4_0:
		rb := m.RowBytes()
		return dotQ4(m.Data[r*rb:(r+1)*rb], x.Q)
	}
	panic("tensor: unsupported type " + m.Type.String())
}
