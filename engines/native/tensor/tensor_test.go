package tensor

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fakhq/fak/engines/native/gguf"
)

func TestHalfConversion(t *testing.T) {
	tests := []struct {
		name string
		f    float32
		h    uint16
	}{
		{"one", 1, 0x3c00},
		{"minus two", -2, 0xc000},
		{"max half", 65504, 0x7bff},
		{"smallest subnormal", float32(math.Ldexp(1, -24)), 0x0001},
		{"overflow to inf", 1e6, 0x7c00},
		{"round to even down", 1 + float32(math.Ldexp(1, -11)), 0x3c00},
		{"round to even up", 1 + 3*float32(math.Ldexp(1, -11)), 0x3c02},
		{"zero", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FloatToHalf(tc.f); got != tc.h {
				t.Fatalf("FloatToHalf(%v) = %#04x, want %#04x", tc.f, got, tc.h)
			}
		})
	}
	// Every finite half survives half -> float -> half exactly.
	for h := 0; h < 1<<16; h++ {
		f := HalfToFloat(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := FloatToHalf(f); back != uint16(h) {
			t.Fatalf("half %#04x -> %v -> %#04x", h, f, back)
		}
	}
	if BF16ToFloat(FloatToBF16(1.5)) != 1.5 {
		t.Fatal("bf16 1.5 does not round trip")
	}
}

func randVec(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// TestRoundTripPerType checks dequantise(quantise(x)) against each
// format's resolution: exact for F32, half an ulp for F16/BF16, half a
// quantisation step (plus the rounding of the half-precision scale) for
// the block formats.
func TestRoundTripPerType(t *testing.T) {
	x := randVec(256, 3)
	for _, tc := range []struct {
		typ gguf.TensorType
		tol func(v, blockMax float32) float64
	}{
		{gguf.TensorF32, func(v, _ float32) float64 { return 0 }},
		{gguf.TensorF16, func(v, _ float32) float64 { return math.Abs(float64(v)) * math.Ldexp(1, -11) }},
		{gguf.TensorBF16, func(v, _ float32) float64 { return math.Abs(float64(v)) * math.Ldexp(1, -8) }},
		{gguf.TensorQ8_0, func(_, m float32) float64 { return float64(m)/127*0.5 + float64(m)*1e-3 }},
		{gguf.TensorQ4_0, func(_, m float32) float64 { return float64(m)/8 + float64(m)*1e-3 }},
	} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			enc, err := Encode(tc.typ, x)
			if err != nil {
				t.Fatal(err)
			}
			if len(enc) != tc.typ.RowBytes(len(x)) {
				t.Fatalf("%d bytes, want %d", len(enc), tc.typ.RowBytes(len(x)))
			}
			got := make([]float32, len(x))
			if err := Decode(tc.typ, enc, got); err != nil {
				t.Fatal(err)
			}
			for i, v := range x {
				blk := x[i/QK*QK : i/QK*QK+QK]
				m := float32(0)
				for _, b := range blk {
					m = max(m, abs32(b))
				}
				if d := math.Abs(float64(got[i] - v)); d > tc.tol(v, m) {
					t.Fatalf("element %d: %v decoded as %v (error %g > %g)", i, v, got[i], d, tc.tol(v, m))
				}
			}
		})
	}
}

// TestKernelsMatchDequantisedDot checks each dot-product kernel against a
// float64 dot of the dequantised row with the exact activations the kernel
// sees (Q8-dequantised for block formats).
func TestKernelsMatchDequantisedDot(t *testing.T) {
	const rows, cols = 5, 512
	w := randVec(rows*cols, 5)
	x := randVec(cols, 6)
	for _, typ := range []gguf.TensorType{gguf.TensorF32, gguf.TensorF16, gguf.TensorBF16, gguf.TensorQ8_0, gguf.TensorQ4_0} {
		t.Run(typ.String(), func(t *testing.T) {
			enc, _ := Encode(typ, w)
			m, err := NewMatrix("w", typ, rows, cols, enc)
			if err != nil {
				t.Fatal(err)
			}
			v := &Vec{F: x}
			v.Prepare()
			xs := x
			if m.Quantized() {
				xs = make([]float32, cols)
				for b := range v.Q {
					for i := 0; i < QK; i++ {
						xs[b*QK+i] = float32(v.Q[b].Qs[i]) * v.Q[b].D
					}
				}
			}
			row := make([]float32, cols)
			for r := 0; r < rows; r++ {
				m.DecodeRow(r, row)
				var want, mag float64
				for i := range row {
					want += float64(row[i]) * float64(xs[i])
					mag += math.Abs(float64(row[i]) * float64(xs[i]))
				}
				got := m.RowDot(r, v)
				if d := math.Abs(float64(got) - want); d > 1e-5*mag {
					t.Fatalf("row %d: kernel %v, float64 %v (|d| %g, scale %g)", r, got, want, d, mag)
				}
			}
		})
	}
}

func TestMulVecsIsDeterministicAcrossPools(t *testing.T) {
	const rows, cols = 300, 256
	enc, _ := Encode(gguf.TensorQ8_0, randVec(rows*cols, 9))
	m, _ := NewMatrix("w", gguf.TensorQ8_0, rows, cols, enc)
	xs := []*Vec{{F: randVec(cols, 10)}, {F: randVec(cols, 11)}}
	for _, v := range xs {
		v.Prepare()
	}
	var ref [][]float32
	for _, workers := range []int{1, 2, 3, 8} {
		p := NewPool(workers)
		out := [][]float32{make([]float32, rows), make([]float32, rows)}
		MulVecs(p, m, xs, out)
		p.Close()
		if ref == nil {
			ref = out
			continue
		}
		for b := range out {
			for r := range out[b] {
				if math.Float32bits(out[b][r]) != math.Float32bits(ref[b][r]) {
					t.Fatalf("%d workers: out[%d][%d] differs from 1 worker", workers, b, r)
				}
			}
		}
	}
	// A vector alone gives the same bits as in a batch of two.
	alone := [][]float32{make([]float32, rows)}
	MulVecs(nil, m, xs[1:], alone)
	for r := range alone[0] {
		if math.Float32bits(alone[0][r]) != math.Float32bits(ref[1][r]) {
			t.Fatalf("row %d: batched and alone differ", r)
		}
	}
}

func TestNewMatrixRejectsBadInput(t *testing.T) {
	if _, err := NewMatrix("w", gguf.TensorQ4K, 1, 256, make([]byte, 144)); err == nil {
		t.Error("Q4_K accepted although no kernel exists")
	}
	if _, err := NewMatrix("w", gguf.TensorF32, 2, 4, make([]byte, 31)); err == nil {
		t.Error("short data accepted")
	}
	if _, err := NewMatrix("w", gguf.TensorQ8_0, 1, 33, make([]byte, 34)); err == nil {
		t.Error("partial block accepted")
	}
}
