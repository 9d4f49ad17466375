// Package tensor holds the native engine's numeric kernels: half-precision
// and block-quantised formats (F16, BF16, Q8_0, Q4_0) with quantisation,
// dequantisation and dot products, and a deterministic parallel matrix
// multiply.
//
// Determinism is a contract here: every output element is computed by one
// goroutine with one fixed reduction order, so results are bit-identical
// whatever GOMAXPROCS is and whatever else shares the batch.
package tensor

import "math"

// f16Table maps every half-precision bit pattern to its float32 value.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = halfToFloat(uint16(i))
	}
	return &t
}()

// HalfToFloat converts an IEEE 754 binary16 value to float32 exactly.
func HalfToFloat(h uint16) float32 { return f16Table[h] }

func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | e<<23 | mant<<13)
	case exp == 0x1f: // inf or nan
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// FloatToHalf converts float32 to binary16, rounding to nearest even.
func FloatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff { // inf or nan
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00 // overflow to inf
	}
	if e <= 0 {
		if e < -10 {
			return sign // underflow to zero
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		r := mant >> shift
		rem := mant & (1<<shift - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++ // may carry into the exponent, which is correct rounding
	}
	return sign | uint16(r)
}

// BF16ToFloat converts a bfloat16 value to float32 exactly.
func BF16ToFloat(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// FloatToBF16 converts float32 to bfloat16, rounding to nearest even.
func FloatToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // nan: keep it a quiet nan
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
