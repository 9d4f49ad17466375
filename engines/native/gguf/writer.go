package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Writer builds a GGUF v3 file: add metadata and tensors, then WriteTo.
// Tensors are written in the order they were added, each aligned.
type Writer struct {
	Metadata  Metadata
	tensors   []TensorInfo
	data      [][]byte
	alignment uint64
}

// NewWriter returns a writer using the default alignment (32).
func NewWriter() *Writer { return &Writer{alignment: DefaultAlignment} }

// Set adds or replaces a metadata key.
func (w *Writer) Set(key string, v Value) {
	for i := range w.Metadata {
		if w.Metadata[i].Key == key {
			w.Metadata[i].Value = v
			return
		}
	}
	w.Metadata = append(w.Metadata, KV{Key: key, Value: v})
	if key == "general.alignment" {
		if a, ok := v.Scalar.(uint32); ok && a > 0 {
			w.alignment = uint64(a)
		}
	}
}

// AddTensor adds a tensor with ggml-order dims and its encoded data. It
// panics if the data length does not match the dims and type: that is a bug
// in the caller, not bad input.
func (w *Writer) AddTensor(name string, typ TensorType, dims []uint64, data []byte) {
	ti := TensorInfo{Name: name, Type: typ, Dims: append([]uint64(nil), dims...)}
	if uint64(len(data)) != ti.Bytes() {
		panic(fmt.Sprintf("gguf: tensor %s: %d bytes for dims %v of %s, want %d", name, len(data), dims, typ, ti.Bytes()))
	}
	w.tensors = append(w.tensors, ti)
	w.data = append(w.data, data)
}

func align(n, a uint64) uint64 { return (n + a - 1) / a * a }

// WriteTo writes the whole file.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	cw := &countWriter{w: bufio.NewWriterSize(out, 1<<20)}
	e := &encoder{w: cw}
	e.raw([]byte(Magic))
	e.u32(Version)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.Metadata)))
	for _, kv := range w.Metadata {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.Type))
		e.value(kv.Value)
	}
	off := uint64(0)
	for i := range w.tensors {
		ti := &w.tensors[i]
		ti.Offset = off
		e.str(ti.Name)
		e.u32(uint32(len(ti.Dims)))
		for _, d := range ti.Dims {
			e.u64(d)
		}
		e.u32(uint32(ti.Type))
		e.u64(ti.Offset)
		off = align(off+uint64(len(w.data[i])), w.alignment)
	}
	e.pad(w.alignment)
	for i, d := range w.data {
		e.raw(d)
		if i < len(w.data)-1 {
			e.pad(w.alignment)
		}
	}
	if e.err == nil {
		e.err = cw.w.(*bufio.Writer).Flush()
	}
	return cw.n, e.err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type encoder struct {
	w   *countWriter
	err error
	buf [8]byte
}

func (e *encoder) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *encoder) pad(a uint64) {
	n := align(uint64(e.w.n), a) - uint64(e.w.n)
	e.raw(make([]byte, n))
}

func (e *encoder) u8(v uint8)   { e.buf[0] = v; e.raw(e.buf[:1]) }
func (e *encoder) u16(v uint16) { binary.LittleEndian.PutUint16(e.buf[:], v); e.raw(e.buf[:2]) }
func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.buf[:], v); e.raw(e.buf[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.buf[:], v); e.raw(e.buf[:8]) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }

func (e *encoder) scalar(t ValueType, v any) {
	switch t {
	case TypeUint8:
		e.u8(v.(uint8))
	case TypeInt8:
		e.u8(uint8(v.(int8)))
	case TypeUint16:
		e.u16(v.(uint16))
	case TypeInt16:
		e.u16(uint16(v.(int16)))
	case TypeUint32:
		e.u32(v.(uint32))
	case TypeInt32:
		e.u32(uint32(v.(int32)))
	case TypeFloat32:
		e.u32(math.Float32bits(v.(float32)))
	case TypeBool:
		if v.(bool) {
			e.u8(1)
		} else {
			e.u8(0)
		}
	case TypeUint64:
		e.u64(v.(uint64))
	case TypeInt64:
		e.u64(uint64(v.(int64)))
	case TypeFloat64:
		e.u64(math.Float64bits(v.(float64)))
	case TypeString:
		e.str(v.(string))
	default:
		panic(fmt.Sprintf("gguf: cannot write value type %s", t))
	}
}

func (e *encoder) value(v Value) {
	if v.Type != TypeArray {
		e.scalar(v.Type, v.Scalar)
		return
	}
	e.u32(uint32(v.ElemType))
	e.u64(uint64(len(v.Array)))
	for _, x := range v.Array {
		if v.ElemType == TypeArray {
			e.value(x.(Value))
			continue
		}
		e.scalar(v.ElemType, x)
	}
}
