package tensor

import (
	"encoding/binary"
)

// DotF32 returns the dot product of a and b (equal length) with a fixed
// reduction order: eight running sums, combined pairwise.
func DotF32(a, b []float32) float32 {
	if len(a) != len(b) {
		panic("tensor: DotF32 length mismatch")
	}
	return dotF32(a, b)
}

func dotF32Generic(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
		s4 += a[i+4] * b[i+4]
		s5 += a[i+5] * b[i+5]
		s6 += a[i+6] * b[i+6]
		s7 += a[i+7] * b[i+7]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// dotF16 is the dot product of a row of half-precision weights with x.
func dotF16(row []byte, x []float32) float32 {
	n := len(x)
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += HalfToFloat(binary.LittleEndian.Uint16(row[2*i:])) * x[i]
		s1 += HalfToFloat(binary.LittleEndian.Uint16(row[2*i+2:])) * x[i+1]
		s2 += HalfToFloat(binary.LittleEndian.Uint16(row[2*i+4:])) * x[i+2]
		s3 += HalfToFloat(binary.LittleEndian.Uint16(row[2*i+6:])) * x[i+3]
	}
	for ; i < n; i++ {
		s0 += HalfToFloat(binary.LittleEndian.Uint16(row[2*i:])) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotBF16 is the dot product of a row of bfloat16 weights with x.
func dotBF16(row []byte, x []float32) float32 {
	n := len(x)
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += BF16ToFloat(binary.LittleEndian.Uint16(row[2*i:])) * x[i]
		s1 += BF16ToFloat(binary.LittleEndian.Uint16(row[2*i+2:])) * x[i+1]
		s2 += BF16ToFloat(binary.LittleEndian.Uint16(row[2*i+4:])) * x[i+2]
		s3 += BF16ToFloat(binary.LittleEndian.Uint16(row[2*i+6:])) * x[i+3]
	}
	for ; i < n; i++ {
		s0 += BF16ToFloat(binary.LittleEndian.Uint16(row[2*i:])) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotQ8Generic is the dot product of a Q8_0 weight row with Q8-quantised
// activations: an exact integer sum per block, scaled once per block.
func dotQ8Generic(row []byte, x []Q8Block) float32 {
	var sum float32
	for b := range x {
		o := row[b*34 : b*34+34]
		q := &x[b].Qs
		var isum int32
		for i := 0; i < QK; i += 4 {
			isum += int32(int8(o[2+i]))*int32(q[i]) +
				int32(int8(o[3+i]))*int32(q[i+1]) +
				int32(int8(o[4+i]))*int32(q[i+2]) +
				int32(int8(o[5+i]))*int32(q[i+3])
		}
		sum += float32(isum) * (HalfToFloat(binary.LittleEndian.Uint16(o)) * x[b].D)
	}
	return sum
}

// dotQ4Generic is the dot product of a Q4_0 weight row with Q8-quantised
// activations.
func dotQ4Generic(row []byte, x []Q8Block) float32 {
	var sum float32
	for b := range x {
		o := row[b*18 : b*18+18]
		q := &x[b].Qs
		var isum int32
		for i := 0; i < QK/2; i++ {
			isum += (int32(o[2+i]&0x0f)-8)*int32(q[i]) + (int32(o[2+i]>>4)-8)*int32(q[i+QK/2])
		}
		sum += float32(isum) * (HalfToFloat(binary.LittleEndian.Uint16(o)) * x[b].D)
	}
	return sum
}
