package tensor

import (
	"runtime"
	"sync"
	"testing"

	"github.com/fakhq/fak/engines/native/gguf"
)

// BenchmarkMemoryBandwidth reads a 1 GiB buffer with every core at once:
// the machine's streaming read bandwidth, the floor under decode speed
// (each decoded token reads every weight once).
func BenchmarkMemoryBandwidth(b *testing.B) {
	buf := make([]uint64, 1<<27) // 1 GiB
	for i := range buf {
		buf[i] = uint64(i)
	}
	workers := runtime.GOMAXPROCS(0)
	b.SetBytes(int64(len(buf) * 8))
	b.ResetTimer()
	var sink uint64
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		part := len(buf) / workers
		sums := make([]uint64, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := buf[w*part : (w+1)*part]
				var a0, a1, a2, a3 uint64
				for j := 0; j+4 <= len(s); j += 4 {
					a0 += s[j]
					a1 += s[j+1]
					a2 += s[j+2]
					a3 += s[j+3]
				}
				sums[w] = a0 + a1 + a2 + a3
			}()
		}
		wg.Wait()
		for _, s := range sums {
			sink += s
		}
	}
	if sink == 1 {
		b.Log(sink)
	}
}

// BenchmarkMulVecs measures the kernels: one 768x768 and 2560x768 product
// per op for a batch of 1 and 8 vectors (the small preset's shapes).
func BenchmarkMulVecs(b *testing.B) {
	for _, typ := range []gguf.TensorType{gguf.TensorF32, gguf.TensorQ8_0, gguf.TensorQ4_0} {
		for _, batch := range []int{1, 8} {
			b.Run(typ.String()+"/batch="+string(rune('0'+batch)), func(b *testing.B) {
				const rows, cols = 2560, 768
				enc, _ := Encode(typ, randVec(rows*cols, 1))
				m, _ := NewMatrix("w", typ, rows, cols, enc)
				xs := make([]*Vec, batch)
				outs := make([][]float32, batch)
				for i := range xs {
					xs[i] = &Vec{F: randVec(cols, uint64(i))}
					xs[i].Prepare()
					outs[i] = make([]float32, rows)
				}
				p := NewPool(0)
				defer p.Close()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					MulVecs(p, m, xs, outs)
				}
				flops := 2.0 * rows * cols * float64(batch) * float64(b.N)
				b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
