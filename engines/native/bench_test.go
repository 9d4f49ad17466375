package native

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fakhq/fak/engines/native/gguf"
	"github.com/fakhq/fak/engines/native/model"
	"github.com/fakhq/fak/fixtures"
)

// smallModel generates (once per cache directory) and opens the small
// preset at quant. Benchmarks share the user's fixture cache so the ~100 M
// parameter model is written only once.
func smallModel(b *testing.B, quant gguf.TensorType) *model.Model {
	b.Helper()
	dir, err := fixtures.CacheDir()
	if err != nil {
		dir = b.TempDir()
	}
	path, _, err := fixtures.EnsureModel(dir, fixtures.Presets["small"], quant, fixtures.DefaultSeed)
	if err != nil {
		b.Fatal(err)
	}
	m, err := model.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

// BenchmarkSmall reports prefill and decode tokens per second for the small
// preset, one request alone and eight at once. Prefill: computed prompt
// tokens over the time to the first token (cache off, so nothing is
// reused). Decode: tokens after the first over the time after the first,
// summed over concurrent requests and divided by the wall time they share.
func BenchmarkSmall(b *testing.B) {
	const promptLen, decodeLen = 64, 32
	for _, quant := range []gguf.TensorType{gguf.TensorF32, gguf.TensorQ8_0} {
		m := smallModel(b, quant)
		for _, conc := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/concurrent=%d", quant, conc), func(b *testing.B) {
				e := New(m, Options{CacheBytes: -1, MaxBatch: conc, PrefillChunk: promptLen * conc})
				defer e.Close()
				var prefillTok, decodeTok int
				var prefillWall, decodeWall time.Duration
				for i := 0; i < b.N; i++ {
					runs := make([]*Run, conc)
					start := time.Now()
					for c := range runs {
						prompt := make([]int, promptLen)
						for j := range prompt {
							prompt[j] = fixtures.FirstByte + (i*131+c*17+j*7)%256
						}
						run, err := e.Generate(context.Background(), Request{Tokens: prompt, MaxTokens: decodeLen})
						if err != nil {
							b.Fatal(err)
						}
						runs[c] = run
					}
					var wg sync.WaitGroup
					res := make([]Result, conc)
					for c, run := range runs {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for range run.Tokens {
							}
							res[c] = run.Result()
						}()
					}
					wg.Wait()
					var lastFirst, lastEnd time.Time
					for _, r := range res {
						if r.Err != nil {
							b.Fatal(r.Err)
						}
						prefillTok += r.PromptTokens - r.CachedTokens
						decodeTok += r.CompletionTokens - 1
						if r.FirstToken.After(lastFirst) {
							lastFirst = r.FirstToken
						}
						if r.Finished.After(lastEnd) {
							lastEnd = r.Finished
						}
					}
					prefillWall += lastFirst.Sub(start)
					decodeWall += lastEnd.Sub(lastFirst)
				}
				b.ReportMetric(float64(prefillTok)/prefillWall.Seconds(), "prefill_tok/s")
				b.ReportMetric(float64(decodeTok)/decodeWall.Seconds(), "decode_tok/s")
				b.ReportMetric(float64(m.WeightBytes)/1e6, "weight_MB")
			})
		}
	}
}
