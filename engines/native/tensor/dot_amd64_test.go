package tensor

import (
	"math"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/fakhq/fak/engines/native/gguf"
)

// TestDotF32AVX2 checks the assembly kernel against float64 for every
// length from 0 to 100, so each of its loops and tails runs.
func TestDotF32AVX2(t *testing.T) {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("this CPU has no AVX2+FMA; the generic kernel is in use and tested elsewhere")
	}
	a, b := randVec(100, 1), randVec(100, 2)
	for n := 0; n <= 100; n++ {
		var want, mag float64
		for i := 0; i < n; i++ {
			want += float64(a[i]) * float64(b[i])
			mag += math.Abs(float64(a[i]) * float64(b[i]))
		}
		got := dotF32AVX2(a[:n], b[:n])
		if d := math.Abs(float64(got) - want); d > 1e-6*mag+1e-30 {
			t.Fatalf("n=%d: %v, want %v", n, got, want)
		}
	}
}

// TestQuantDotsAVX2 checks the block kernels against the generic ones for
// 1 to 40 blocks; both are exact integer sums per block, so they may
// differ only by float32 rounding of the scaled sums.
func TestQuantDotsAVX2(t *testing.T) {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("this CPU has no AVX2+FMA; the generic kernels are in use and tested elsewhere")
	}
	w, x := randVec(40*QK, 3), randVec(40*QK, 4)
	q8, _ := Encode(gguf.TensorQ8_0, w)
	q4, _ := Encode(gguf.TensorQ4_0, w)
	xq := make([]Q8Block, 40)
	QuantizeQ8(x, xq)
	for n := 1; n <= 40; n++ {
		for _, k := range []struct {
			name      string
			fast, ref func([]byte, []Q8Block) float32
			row       []byte
		}{
			{"q8_0", dotQ8AVX2, dotQ8Generic, q8[:n*34]},
			{"q4_0", dotQ4AVX2, dotQ4Generic, q4[:n*18]},
		} {
			got, want := k.fast(k.row, xq[:n]), k.ref(k.row, xq[:n])
			if d := math.Abs(float64(got - want)); d > 1e-5*math.Max(1, math.Abs(float64(want))) {
				t.Fatalf("%s, %d blocks: avx2 %v, generic %v", k.name, n, got, want)
			}
		}
	}
}
