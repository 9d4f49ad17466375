package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func dotF32AVX2(a, b []float32) float32

//go:noescape
func dotQ8AVX2(row []byte, x []Q8Block) float32

//go:noescape
func dotQ4AVX2(row []byte, x []Q8Block) float32

// The assembly reads Q8Block as a float32 scale followed by 32 int8s.
var _ [36]byte = [unsafe.Sizeof(Q8Block{})]byte{}

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasSSE3 {
		dotF32 = dotF32AVX2
		dotQ8 = dotQ8AVX2
		dotQ4 = dotQ4AVX2
	}
}
