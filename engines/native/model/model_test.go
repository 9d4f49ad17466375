package model

import (
	"bytes"
	"math"
	"runtime"
	"testing"

	"github.com/fakhq/fak/engines/native/gguf"
	"github.com/fakhq/fak/engines/native/tensor"
	"github.com/fakhq/fak/fixtures"
)

// tinyModel generates the tiny fixture at quant in memory and loads it.
func tinyModel(t testing.TB, quant gguf.TensorType) *Model {
	t.Helper()
	var buf bytes.Buffer
	if _, err := fixtures.WriteModel(&buf, fixtures.Presets["tiny"], quant, 7); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// refForward is the same llama forward pass in plain float64, written from
// the definitions and sharing no code with Forward: weights dequantised to
// float64, full attention recomputed for every position.
func refForward(m *Model, tokens []int) [][]float64 {
	dec := func(mat *tensor.Matrix) [][]float64 {
		out := make([][]float64, mat.Rows)
		row := make([]float32, mat.Cols)
		for r := range out {
			mat.DecodeRow(r, row)
			out[r] = make([]float64, mat.Cols)
			for c, v := range row {
				out[r][c] = float64(v)
			}
		}
		return out
	}
	mul := func(w [][]float64, x []float64) []float64 {
		y := make([]float64, len(w))
		for r := range w {
			for c := range x {
				y[r] += w[r][c] * x[c]
			}
		}
		return y
	}
	norm := func(x []float64, w []float32) []float64 {
		ss := 0.0
		for _, v := range x {
			ss += v * v
		}
		s := 1 / math.Sqrt(ss/float64(len(x))+float64(m.Eps))
		y := make([]float64, len(x))
		for i := range x {
			y[i] = x[i] * s * float64(w[i])
		}
		return y
	}
	rope := func(v []float64, pos int) {
		d := m.RopeDim
		for i := 0; i < d/2; i++ {
			th := float64(pos) / math.Pow(float64(m.RopeBase), float64(2*i)/float64(d))
			a, b := 2*i, 2*i+1
			x0, x1 := v[a], v[b]
			v[a] = x0*math.Cos(th) - x1*math.Sin(th)
			v[b] = x0*math.Sin(th) + x1*math.Cos(th)
		}
	}
	embd := dec(m.Embd)
	hd := m.HeadDim
	xs := make([][]float64, len(tokens))
	for i, tok := range tokens {
		xs[i] = append([]float64(nil), embd[tok]...)
	}
	for _, L := range m.Layers {
		wq, wk, wv, wo := dec(L.Q), dec(L.K), dec(L.V), dec(L.O)
		wg, wu, wd := dec(L.Gate), dec(L.Up), dec(L.Down)
		ks, vs, qs := make([][]float64, len(tokens)), make([][]float64, len(tokens)), make([][]float64, len(tokens))
		for i := range tokens {
			h := norm(xs[i], L.AttnNorm)
			qs[i], ks[i], vs[i] = mul(wq, h), mul(wk, h), mul(wv, h)
			for hh := 0; hh < m.Heads; hh++ {
				rope(qs[i][hh*hd:(hh+1)*hd], i)
			}
			for hh := 0; hh < m.KVHeads; hh++ {
				rope(ks[i][hh*hd:(hh+1)*hd], i)
			}
		}
		for i := range tokens {
			att := make([]float64, m.Heads*hd)
			for hh := 0; hh < m.Heads; hh++ {
				g := hh / (m.Heads / m.KVHeads)
				w := make([]float64, i+1)
				mx := math.Inf(-1)
				for j := 0; j <= i; j++ {
					for d := 0; d < hd; d++ {
						w[j] += qs[i][hh*hd+d] * ks[j][g*hd+d]
					}
					w[j] /= math.Sqrt(float64(hd))
					mx = math.Max(mx, w[j])
				}
				sum := 0.0
				for j := range w {
					w[j] = math.Exp(w[j] - mx)
					sum += w[j]
				}
				for j := range w {
					for d := 0; d < hd; d++ {
						att[hh*hd+d] += w[j] / sum * vs[j][g*hd+d]
					}
				}
			}
			o := mul(wo, att)
			for d := range xs[i] {
				xs[i][d] += o[d]
			}
			h := norm(xs[i], L.FFNNorm)
			g, u := mul(wg, h), mul(wu, h)
			for d := range g {
				g[d] = g[d] / (1 + math.Exp(-g[d])) * u[d]
			}
			dn := mul(wd, g)
			for d := range xs[i] {
				xs[i][d] += dn[d]
			}
		}
	}
	out := dec(m.Out)
	logits := make([][]float64, len(tokens))
	for i := range tokens {
		logits[i] = mul(out, norm(xs[i], m.OutNorm))
	}
	return logits
}

func forwardAll(t testing.TB, m *Model, p *tensor.Pool, tokens []int) [][]float32 {
	t.Helper()
	kv := m.NewKV(len(tokens))
	items := make([]Item, len(tokens))
	for i, tok := range tokens {
		items[i] = Item{KV: kv, Token: tok, Pos: i, Logits: true}
	}
	out, err := m.Forward(p, items)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestForwardMatchesFloat64Reference(t *testing.T) {
	// The reference runs on the very weights the file holds (dequantised),
	// so for float formats only float32 rounding separates the two. For
	// Q8_0 and Q4_0 the engine also quantises activations to 8 bits, as
	// llama.cpp does, which bounds the error at the percent level.
	tests := []struct {
		quant gguf.TensorType
		tol   float64
	}{
		{gguf.TensorF32, 1e-5},
		{gguf.TensorF16, 1e-5},
		{gguf.TensorBF16, 1e-5},
		{gguf.TensorQ8_0, 5e-2},
		{gguf.TensorQ4_0, 5e-2},
	}
	for _, tc := range tests {
		t.Run(tc.quant.String(), func(t *testing.T) {
			m := tinyModel(t, tc.quant)
			tokens := m.Tok.Encode("The quick brown fox jumps over the lazy dog.", true)
			got := forwardAll(t, m, nil, tokens)
			want := refForward(m, tokens)
			worst := 0.0
			for i := range tokens {
				scale := 0.0
				for _, v := range want[i] {
					scale = math.Max(scale, math.Abs(v))
				}
				for j := range want[i] {
					worst = math.Max(worst, math.Abs(float64(got[i][j])-want[i][j])/scale)
				}
			}
			t.Logf("%s: worst relative logit error over %d positions: %.3g", tc.quant, len(tokens), worst)
			if !(worst < tc.tol) {
				t.Fatalf("relative logit error %.3g, want < %g", worst, tc.tol)
			}
		})
	}
}

func equalBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestForwardIsBatchAndThreadInvariant(t *testing.T) {
	for _, quant := range []gguf.TensorType{gguf.TensorF32, gguf.TensorQ8_0, gguf.TensorQ4_0} {
		t.Run(quant.String(), func(t *testing.T) {
			m := tinyModel(t, quant)
			a := m.Tok.Encode("first sequence, alone", true)
			b := m.Tok.Encode("a second, longer sequence that shares the batch", true)
			alone := forwardAll(t, m, nil, a)

			// The same tokens, one at a time (decode-style), on a 3-worker pool.
			pool := tensor.NewPool(3)
			defer pool.Close()
			kv := m.NewKV(4)
			for i, tok := range a {
				out, err := m.Forward(pool, []Item{{KV: kv, Token: tok, Pos: i, Logits: true}})
				if err != nil {
					t.Fatal(err)
				}
				if !equalBits(out[0], alone[i]) {
					t.Fatalf("token %d one at a time on 3 workers differs from the whole prompt on 1", i)
				}
			}

			// Interleaved with another sequence in one batch.
			prev := runtime.GOMAXPROCS(1)
			defer runtime.GOMAXPROCS(prev)
			kvA, kvB := m.NewKV(0), m.NewKV(0)
			var items []Item
			for i := range max(len(a), len(b)) {
				if i < len(b) {
					items = append(items, Item{KV: kvB, Token: b[i], Pos: i, Logits: true})
				}
				if i < len(a) {
					items = append(items, Item{KV: kvA, Token: a[i], Pos: i, Logits: true})
				}
			}
			out, err := m.Forward(tensor.NewPool(2), items)
			if err != nil {
				t.Fatal(err)
			}
			j := 0
			for i, it := range items {
				if it.KV == kvA {
					if !equalBits(out[i], alone[j]) {
						t.Fatalf("token %d of a batched with b differs from a alone", j)
					}
					j++
				}
			}
		})
	}
}

func TestForwardRejectsBadItems(t *testing.T) {
	m := tinyModel(t, gguf.TensorF32)
	kv := m.NewKV(0)
	tests := []struct {
		name string
		item Item
	}{
		{"token outside vocabulary", Item{KV: kv, Token: m.Vocab, Pos: 0}},
		{"position gap", Item{KV: kv, Token: 1, Pos: 2}},
		{"past context", Item{KV: kv, Token: 1, Pos: m.Context}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := m.Forward(nil, []Item{tc.item}); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}
