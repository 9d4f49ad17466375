package tensor

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/fakhq/fak/engines/native/gguf"
)

// QK is the block size of Q8_0 and Q4_0: 32 elements share one scale.
const QK = 32

// Q8Block is a Q8_0-quantised activation block with a float32 scale. Weights
// on disk use a half-precision scale; activations keep full precision.
type Q8Block struct {
	D  float32
	Qs [QK]int8
}

// QuantizeQ8 quantises x (a multiple of 32 long) into dst blocks, the way
// llama.cpp's reference quantiser does: scale = max|x| / 127, round half
// away from zero.
func QuantizeQ8(x []float32, dst []Q8Block) {
	for b := range dst {
		blk := x[b*QK : (b+1)*QK]
		amax := float32(0)
		for _, v := range blk {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		dst[b].D = d
		for i, v := range blk {
			dst[b].Qs[i] = int8(roundAway(v * id))
		}
	}
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

func roundAway(v float32) float32 { return float32(math.Round(float64(v))) }

// Encode quantises a row of float32 values to type t and returns its bytes.
// Supported: F32, F16, BF16, Q8_0, Q4_0.
func Encode(t gguf.TensorType, x []float32) ([]byte, error) {
	if t.Known() && len(x)%t.BlockSize() != 0 {
		return nil, fmt.Errorf("encode %s: %d elements is not a whole number of blocks", t, len(x))
	}
	switch t {
	case gguf.TensorF32:
		out := make([]byte, 4*len(x))
		for i, v := range x {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
		return out, nil
	case gguf.TensorF16:
		out := make([]byte, 2*len(x))
		for i, v := range x {
			binary.LittleEndian.PutUint16(out[2*i:], FloatToHalf(v))
		}
		return out, nil
	case gguf.TensorBF16:
		out := make([]byte, 2*len(x))
		for i, v := range x {
			binary.LittleEndian.PutUint16(out[2*i:], FloatToBF16(v))
		}
		return out, nil
	case gguf.TensorQ8_0:
		out := make([]byte, len(x)/QK*34)
		for b := 0; b < len(x)/QK; b++ {
			blk := x[b*QK : (b+1)*QK]
			o := out[b*34 : (b+1)*34]
			amax := float32(0)
			for _, v := range blk {
				amax = max(amax, abs32(v))
			}
			d := amax / 127
			id := float32(0)
			if d != 0 {
				id = 1 / d
			}
			binary.LittleEndian.PutUint16(o, FloatToHalf(d))
			for i, v := range blk {
				o[2+i] = byte(int8(roundAway(v * id)))
			}
		}
		return out, nil
	case gguf.TensorQ4_0:
		out := make([]byte, len(x)/QK*18)
		for b := 0; b < len(x)/QK; b++ {
			blk := x[b*QK : (b+1)*QK]
			o := out[b*18 : (b+1)*18]
			// The scale is signed: the value of largest magnitude maps to -8.
			amax, vmax := float32(0), float32(0)
			for _, v := range blk {
				if abs32(v) > amax {
					amax, vmax = abs32(v), v
				}
			}
			d := vmax / -8
			id := float32(0)
			if d != 0 {
				id = 1 / d
			}
			binary.LittleEndian.PutUint16(o, FloatToHalf(d))
			for i := 0; i < QK/2; i++ {
				q0 := min(15, int(blk[i]*id+8.5))
				q1 := min(15, int(blk[i+QK/2]*id+8.5))
				o[2+i] = byte(q0) | byte(q1)<<4
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("encode: tensor type %s is not supported", t)
}

// Decode dequantises n elements of type t from b into dst.
func Decode(t gguf.TensorType, b []byte, dst []float32) error {
	n := len(dst)
	if !t.Known() || n%t.BlockSize() != 0 || len(b) < t.RowBytes(n) {
		return fmt.Errorf("decode %s: %d bytes cannot hold %d elements", t, len(b), n)
	}
	switch t {
	case gguf.TensorF32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case gguf.TensorF16:
		for i := range dst {
			dst[i] = HalfToFloat(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case gguf.TensorBF16:
		for i := range dst {
			dst[i] = BF16ToFloat(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case gguf.TensorQ8_0:
		for blk := 0; blk < n/QK; blk++ {
			o := b[blk*34:]
			d := HalfToFloat(binary.LittleEndian.Uint16(o))
			for i := 0; i < QK; i++ {
				dst[blk*QK+i] = float32(int8(o[2+i])) * d
			}
		}
	case gguf.TensorQ4_0:
		for blk := 0; blk < n/QK; blk++ {
			o := b[blk*18:]
			d := HalfToFloat(binary.LittleEndian.Uint16(o))
			for i := 0; i < QK/2; i++ {
				dst[blk*QK+i] = float32(int(o[2+i]&0x0f)-8) * d
				dst[blk*QK+i+QK/2] = float32(int(o[2+i]>>4)-8) * d
			}
		}
	default:
		return fmt.Errorf("decode: tensor type %s is not supported by the native engine (supported: F32, F16, BF16, Q8_0, Q4_0)", t)
	}
	return nil
}

// Supported reports whether the native engine computes with type t.
func Supported(t gguf.TensorType) bool {
	switch t {
	case gguf.TensorF32, gguf.TensorF16, gguf.TensorBF16, gguf.TensorQ8_0, gguf.TensorQ4_0:
		return true
	}
	return false
}
