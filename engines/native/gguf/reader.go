package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"os"
	"syscall"
)

// TensorInfo describes one tensor. Dims are in ggml order: Dims[0] is the
// fastest-varying (row length), so a weight with Dims [in, out] has out rows
// of in elements.
type TensorInfo struct {
	Name   string
	Dims   []uint64
	Type   TensorType
	Offset uint64 // from the start of the data section
	Data   []byte // the tensor's bytes (nil on a writer-side TensorInfo)
}

// Elements is the number of elements in the tensor.
func (t *TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Bytes is the encoded size of the tensor's data.
func (t *TensorInfo) Bytes() uint64 {
	return t.Elements() / uint64(t.Type.BlockSize()) * uint64(t.Type.BlockBytes())
}

// File is a parsed GGUF file. Tensor data slices alias the file's bytes.
type File struct {
	Version    uint32
	Metadata   Metadata
	Tensors    []TensorInfo
	Alignment  uint64
	DataOffset uint64 // byte offset of the data section
	Size       int64

	unmap func() error
}

// Tensor returns the named tensor.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			return &f.Tensors[i], true
		}
	}
	return nil, false
}

// Close releases the file's memory mapping, if any. Tensor data must not be
// used after Close.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	u := f.unmap
	f.unmap = nil
	return u()
}

// Open maps a GGUF file into memory read-only and parses it. Tensor data is
// not copied: a multi-gigabyte model costs address space, not heap.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, fmt.Errorf("%s: %w", path, &FormatError{0, "magic", "file is empty"})
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("%s: file too large to map (%d bytes)", path, size)
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	f, err := Parse(data)
	if err != nil {
		_ = syscall.Munmap(data)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.unmap = func() error { return syscall.Munmap(data) }
	return f, nil
}

// maxArrayDepth bounds nested arrays so a hostile file cannot recurse deeply.
const maxArrayDepth = 8

// maxDims is the most dimensions ggml supports.
const maxDims = 4

type decoder struct {
	b   []byte
	off int64
}

func (d *decoder) fail(field, format string, args ...any) error {
	return &FormatError{Offset: d.off, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) remaining() int64 { return int64(len(d.b)) - d.off }

func (d *decoder) need(field string, n int64) error {
	if n < 0 || d.remaining() < n {
		return d.fail(field, "truncated: need %d bytes, %d remain", n, d.remaining())
	}
	return nil
}

func (d *decoder) u8(field string) (uint8, error) {
	if err := d.need(field, 1); err != nil {
		return 0, err
	}
	v := d.b[d.off]
	d.off++
	return v, nil
}

func (d *decoder) u16(field string) (uint16, error) {
	if err := d.need(field, 2); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint16(d.b[d.off:])
	d.off += 2
	return v, nil
}

func (d *decoder) u32(field string) (uint32, error) {
	if err := d.need(field, 4); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v, nil
}

func (d *decoder) u64(field string) (uint64, error) {
	if err := d.need(field, 8); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v, nil
}

func (d *decoder) str(field string) (string, error) {
	start := d.off
	n, err := d.u64(field + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(d.remaining()) {
		d.off = start
		return "", d.fail(field, "string length %d exceeds the %d bytes that remain", n, d.remaining()-8)
	}
	s := string(d.b[d.off : d.off+int64(n)])
	d.off += int64(n)
	return s, nil
}

func (d *decoder) scalar(field string, t ValueType) (any, error) {
	switch t {
	case TypeUint8:
		return d.u8(field)
	case TypeInt8:
		v, err := d.u8(field)
		return int8(v), err
	case TypeUint16:
		return d.u16(field)
	case TypeInt16:
		v, err := d.u16(field)
		return int16(v), err
	case TypeUint32:
		return d.u32(field)
	case TypeInt32:
		v, err := d.u32(field)
		return int32(v), err
	case TypeFloat32:
		v, err := d.u32(field)
		return math.Float32frombits(v), err
	case TypeBool:
		v, err := d.u8(field)
		if err != nil {
			return nil, err
		}
		if v > 1 {
			d.off--
			return nil, d.fail(field, "bool byte is %d, want 0 or 1", v)
		}
		return v == 1, nil
	case TypeUint64:
		return d.u64(field)
	case TypeInt64:
		v, err := d.u64(field)
		return int64(v), err
	case TypeFloat64:
		v, err := d.u64(field)
		return math.Float64frombits(v), err
	case TypeString:
		return d.str(field)
	}
	return nil, d.fail(field, "unknown value type %d", uint32(t))
}

func (d *decoder) value(field string, t ValueType, depth int) (Value, error) {
	if t != TypeArray {
		v, err := d.scalar(field, t)
		return Value{Type: t, Scalar: v}, err
	}
	if depth >= maxArrayDepth {
		return Value{}, d.fail(field, "arrays nested deeper than %d", maxArrayDepth)
	}
	et32, err := d.u32(field + " element type")
	if err != nil {
		return Value{}, err
	}
	et := ValueType(et32)
	if _, ok := valueTypeNames[et]; !ok {
		d.off -= 4
		return Value{}, d.fail(field+" element type", "unknown value type %d", et32)
	}
	n, err := d.u64(field + " count")
	if err != nil {
		return Value{}, err
	}
	// Each element takes at least minSize bytes, so the count is bounded by
	// what remains. This is what keeps a hostile count from allocating.
	minSize := int64(et.fixedSize())
	switch et {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if n > uint64(d.remaining()/minSize) {
		d.off -= 8
		return Value{}, d.fail(field+" count", "%d elements of %s cannot fit in the %d bytes that remain", n, et, d.remaining()-8)
	}
	arr := make([]any, n)
	for i := range arr {
		if et == TypeArray {
			v, err := d.value(fmt.Sprintf("%s[%d]", field, i), et, depth+1)
			if err != nil {
				return Value{}, err
			}
			arr[i] = v
			continue
		}
		v, err := d.scalar(fmt.Sprintf("%s[%d]", field, i), et)
		if err != nil {
			return Value{}, err
		}
		arr[i] = v
	}
	return Value{Type: TypeArray, ElemType: et, Array: arr}, nil
}

// Parse decodes a GGUF file held in memory. Tensor Data slices alias b.
func Parse(b []byte) (*File, error) {
	d := &decoder{b: b}
	if err := d.need("magic", 4); err != nil {
		return nil, err
	}
	if string(b[:4]) != Magic {
		return nil, d.fail("magic", "got %q, want %q", b[:4], Magic)
	}
	d.off = 4
	f := &File{Size: int64(len(b)), Alignment: DefaultAlignment}
	var err error
	if f.Version, err = d.u32("version"); err != nil {
		return nil, err
	}
	if f.Version != 2 && f.Version != 3 {
		d.off -= 4
		return nil, d.fail("version", "unsupported version %d (this reader takes 2 and 3)", f.Version)
	}
	nTensors, err := d.u64("tensor_count")
	if err != nil {
		return nil, err
	}
	nKV, err := d.u64("metadata_kv_count")
	if err != nil {
		return nil, err
	}
	// A key/value takes at least 8+4+1 bytes, a tensor info at least 8+4+8+4+8.
	if nKV > uint64(d.remaining()/13) {
		d.off -= 8
		return nil, d.fail("metadata_kv_count", "%d entries cannot fit in a %d-byte file", nKV, len(b))
	}
	if nTensors > uint64(d.remaining()/32) {
		d.off -= 16
		return nil, d.fail("tensor_count", "%d tensors cannot fit in a %d-byte file", nTensors, len(b))
	}
	f.Metadata = make(Metadata, 0, nKV)
	for i := uint64(0); i < nKV; i++ {
		key, err := d.str(fmt.Sprintf("metadata[%d].key", i))
		if err != nil {
			return nil, err
		}
		t, err := d.u32(fmt.Sprintf("metadata %q type", key))
		if err != nil {
			return nil, err
		}
		if _, ok := valueTypeNames[ValueType(t)]; !ok {
			d.off -= 4
			return nil, d.fail(fmt.Sprintf("metadata %q type", key), "unknown value type %d", t)
		}
		v, err := d.value(fmt.Sprintf("metadata %q", key), ValueType(t), 0)
		if err != nil {
			return nil, err
		}
		f.Metadata = append(f.Metadata, KV{Key: key, Value: v})
	}
	if v, ok := f.Metadata.Get("general.alignment"); ok {
		a, ok := v.Scalar.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 {
			return nil, &FormatError{Offset: 0, Field: "metadata general.alignment", Msg: fmt.Sprintf("must be a uint32 power of two, got %v (%s)", v.Scalar, v.Type)}
		}
		f.Alignment = uint64(a)
	}
	f.Tensors = make([]TensorInfo, nTensors)
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if ti.Name, err = d.str(fmt.Sprintf("tensor[%d].name", i)); err != nil {
			return nil, err
		}
		field := fmt.Sprintf("tensor %q", ti.Name)
		nd, err := d.u32(field + " n_dims")
		if err != nil {
			return nil, err
		}
		if nd == 0 || nd > maxDims {
			d.off -= 4
			return nil, d.fail(field+" n_dims", "%d dimensions, want 1 to %d", nd, maxDims)
		}
		ti.Dims = make([]uint64, nd)
		elems := uint64(1)
		for j := range ti.Dims {
			if ti.Dims[j], err = d.u64(fmt.Sprintf("%s dims[%d]", field, j)); err != nil {
				return nil, err
			}
			hi, lo := bits.Mul64(elems, ti.Dims[j])
			if hi != 0 || ti.Dims[j] == 0 {
				d.off -= 8
				return nil, d.fail(fmt.Sprintf("%s dims[%d]", field, j), "dimension %d is zero or overflows the element count", ti.Dims[j])
			}
			elems = lo
		}
		typ, err := d.u32(field + " type")
		if err != nil {
			return nil, err
		}
		ti.Type = TensorType(typ)
		if !ti.Type.Known() {
			d.off -= 4
			return nil, d.fail(field+" type", "unknown tensor type %d", typ)
		}
		if ti.Dims[0]%uint64(ti.Type.BlockSize()) != 0 {
			d.off -= 4
			return nil, d.fail(field+" type", "row of %d elements is not a whole number of %s blocks of %d", ti.Dims[0], ti.Type, ti.Type.BlockSize())
		}
		if ti.Offset, err = d.u64(field + " offset"); err != nil {
			return nil, err
		}
		if ti.Offset%f.Alignment != 0 {
			d.off -= 8
			return nil, d.fail(field+" offset", "offset %d is not a multiple of the alignment %d", ti.Offset, f.Alignment)
		}
	}
	f.DataOffset = (uint64(d.off) + f.Alignment - 1) / f.Alignment * f.Alignment
	dataLen := uint64(len(b)) - min(f.DataOffset, uint64(len(b)))
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		hi, size := bits.Mul64(ti.Elements()/uint64(ti.Type.BlockSize()), uint64(ti.Type.BlockBytes()))
		if hi != 0 || ti.Offset > dataLen || size > dataLen-ti.Offset {
			return nil, &FormatError{
				Offset: int64(f.DataOffset + ti.Offset),
				Field:  fmt.Sprintf("tensor %q data", ti.Name),
				Msg:    fmt.Sprintf("%d bytes at data offset %d run past the end of the file (data section is %d bytes)", size, ti.Offset, dataLen),
			}
		}
		start := f.DataOffset + ti.Offset
		ti.Data = b[start : start+size : start+size]
	}
	return f, nil
}
