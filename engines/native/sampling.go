package native

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Sampling chooses the next token. Temperature 0 is greedy (argmax, lowest
// id on ties); otherwise logits are divided by the temperature, cut to the
// TopK best (0: all) and to the smallest set whose probability reaches TopP
// (0 or 1: all), and drawn with a generator seeded by Seed, so that the
// same request with the same seed gives the same tokens.
type Sampling struct {
	Temperature float64
	TopK        int
	TopP        float64
	Seed        uint64
}

type rng struct{ r *rand.Rand }

func newRNG(seed uint64) *rng { return &rng{rand.New(rand.NewPCG(seed, 0x73616d706c65))} }

func argmax(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}

func sample(logits []float32, s Sampling, g *rng) int {
	if s.Temperature <= 0 || s.TopK == 1 {
		return argmax(logits)
	}
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	if s.TopK > 0 && s.TopK < len(idx) {
		idx = idx[:s.TopK]
	}
	probs := make([]float64, len(idx))
	top := float64(logits[idx[0]])
	var sum float64
	for i, id := range idx {
		probs[i] = math.Exp((float64(logits[id]) - top) / s.Temperature)
		sum += probs[i]
	}
	if s.TopP > 0 && s.TopP < 1 {
		var cum float64
		for i := range probs {
			cum += probs[i] / sum
			if cum >= s.TopP {
				idx, probs = idx[:i+1], probs[:i+1]
				break
			}
		}
		sum = 0
		for _, p := range probs {
			sum += p
		}
	}
	u := g.r.Float64() * sum
	for i, p := range probs {
		u -= p
		if u < 0 {
			return idx[i]
		}
	}
	return idx[len(idx)-1]
}
