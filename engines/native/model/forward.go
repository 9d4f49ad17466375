package model

import (
	"fmt"
	"math"

	"github.com/fakhq/fak/engines/native/tensor"
)

// Item is one token to feed: the sequence it belongs to, its id and
// position. Items of one sequence must come in order with consecutive
// positions starting at that sequence's KV.Len.
type Item struct {
	KV     *KV
	Token  int
	Pos    int
	Logits bool // compute logits for this item
}

// Forward runs one step over a batch of tokens from any mix of sequences
// (prefill chunks and decode tokens alike), appends their K and V to their
// sequences' caches, and returns logits for the items that asked (nil for
// the others).
//
// Every per-token quantity is computed by a kernel that sees only that
// token's inputs, in a fixed order, so a token's logits do not depend on
// what else is in the batch, on how a prompt was chunked, or on GOMAXPROCS.
func (m *Model) Forward(p *tensor.Pool, items []Item) ([][]float32, error) {
	if err := m.checkItems(items); err != nil {
		return nil, err
	}
	n := len(items)
	dim, hd, kvDim := m.Dim, m.HeadDim, m.KVDim()
	qDim := m.Heads * hd
	x := make2(n, dim)
	for i, it := range items {
		m.Embd.DecodeRow(it.Token, x[i])
		it.KV.grow(it.Pos + 1)
	}
	h := vecs(n, dim)
	q, k, v := make2(n, qDim), make2(n, kvDim), make2(n, kvDim)
	att := vecs(n, qDim)
	o := make2(n, dim)
	hf := vecs(n, m.FFN)
	gate, up := make2(n, m.FFN), make2(n, m.FFN)
	for li := range m.Layers {
		L := &m.Layers[li]
		for i := range items {
			rmsNorm(h[i].F, x[i], L.AttnNorm, m.Eps)
		}
		prepare(h, L.Q)
		tensor.MulVecs(p, L.Q, h, q)
		tensor.MulVecs(p, L.K, h, k)
		tensor.MulVecs(p, L.V, h, v)
		for i, it := range items {
			addBias(q[i], L.QBias)
			addBias(k[i], L.KBias)
			addBias(v[i], L.VBias)
			for hh := 0; hh < m.Heads; hh++ {
				m.rope(q[i][hh*hd:(hh+1)*hd], it.Pos)
			}
			for hh := 0; hh < m.KVHeads; hh++ {
				m.rope(k[i][hh*hd:(hh+1)*hd], it.Pos)
			}
			copy(it.KV.K[li][it.Pos*kvDim:(it.Pos+1)*kvDim], k[i])
			copy(it.KV.V[li][it.Pos*kvDim:(it.Pos+1)*kvDim], v[i])
		}
		m.attention(p, li, items, q, att)
		prepare(att, L.O)
		tensor.MulVecs(p, L.O, att, o)
		for i := range items {
			add(x[i], o[i])
			rmsNorm(h[i].F, x[i], L.FFNNorm, m.Eps)
		}
		prepare(h, L.Gate)
		tensor.MulVecs(p, L.Gate, h, gate)
		tensor.MulVecs(p, L.Up, h, up)
		for i := range items {
			swiglu(hf[i].F, gate[i], up[i])
		}
		prepare(hf, L.Down)
		tensor.MulVecs(p, L.Down, hf, o)
		for i := range items {
			add(x[i], o[i])
		}
	}
	for _, it := range items {
		it.KV.Len = max(it.KV.Len, it.Pos+1)
	}
	var want []*tensor.Vec
	var idx []int
	for i, it := range items {
		if it.Logits {
			v := &tensor.Vec{F: make([]float32, dim)}
			rmsNorm(v.F, x[i], m.OutNorm, m.Eps)
			want = append(want, v)
			idx = append(idx, i)
		}
	}
	logits := make([][]float32, n)
	if len(want) > 0 {
		prepare(want, m.Out)
		outs := make2(len(want), m.Vocab)
		tensor.MulVecs(p, m.Out, want, outs)
		for j, i := range idx {
			logits[i] = outs[j]
		}
	}
	return logits, nil
}

func (m *Model) checkItems(items []Item) error {
	next := map[*KV]int{}
	for i, it := range items {
		if it.Token < 0 || it.Token >= m.Vocab {
			return fmt.Errorf("item %d: token %d is outside the vocabulary of %d", i, it.Token, m.Vocab)
		}
		if it.Pos >= m.Context {
			return fmt.Errorf("item %d: position %d is past the context length %d", i, it.Pos, m.Context)
		}
		want, seen := next[it.KV]
		if !seen {
			want = it.KV.Len
		}
		if it.Pos != want {
			return fmt.Errorf("item %d: position %d, want %d (positions of a sequence must be consecutive)", i, it.Pos, want)
		}
		next[it.KV] = it.Pos + 1
	}
	return nil
}

// attention computes, for every item and head, softmax(q·K/√d)·V over the
// item's sequence up to and including its own position.
func (m *Model) attention(p *tensor.Pool, layer int, items []Item, q [][]float32, out []*tensor.Vec) {
	hd, kvDim := m.HeadDim, m.KVDim()
	group := m.Heads / m.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	maxPos := 0
	for _, it := range items {
		maxPos = max(maxPos, it.Pos)
	}
	p.For(len(items)*m.Heads, 1, func(lo, hi int) {
		scores := make([]float32, maxPos+1)
		for t := lo; t < hi; t++ {
			i, h := t/m.Heads, t%m.Heads
			it := items[i]
			K, V := it.KV.K[layer], it.KV.V[layer]
			qh := q[i][h*hd : (h+1)*hd]
			off := (h / group) * hd
			s := scores[:it.Pos+1]
			mx := float32(math.Inf(-1))
			for j := range s {
				s[j] = tensor.DotF32(qh, K[j*kvDim+off:j*kvDim+off+hd]) * scale
				mx = max(mx, s[j])
			}
			var sum float64
			for j := range s {
				s[j] = float32(math.Exp(float64(s[j] - mx)))
				sum += float64(s[j])
			}
			inv := float32(1 / sum)
			o := out[i].F[h*hd : (h+1)*hd]
			clear(o)
			for j := range s {
				w := s[j] * inv
				vj := V[j*kvDim+off : j*kvDim+off+hd]
				for d := range o {
					o[d] += w * vj[d]
				}
			}
		}
	})
}

// rope rotates the first RopeDim values of one head in place: adjacent
// pairs (normal) or pairs half a rotation apart (NeoX).
func (m *Model) rope(x []float32, pos int) {
	d := m.RopeDim
	for i := 0; i < d/2; i++ {
		theta := float64(pos) * math.Pow(float64(m.RopeBase), -float64(2*i)/float64(d))
		c, s := float32(math.Cos(theta)), float32(math.Sin(theta))
		a, b := 2*i, 2*i+1
		if m.RopeNeoX {
			a, b = i, i+d/2
		}
		x0, x1 := x[a], x[b]
		x[a] = x0*c - x1*s
		x[b] = x0*s + x1*c
	}
}

func rmsNorm(dst, x, w []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
	for i, v := range x {
		dst[i] = v * scale * w[i]
	}
}

func swiglu(dst, gate, up []float32) {
	for i, g := range gate {
		dst[i] = g / (1 + float32(math.Exp(-float64(g)))) * up[i]
	}
}

func add(dst, src []float32) {
	for i := range dst {
		dst[i] += src[i]
	}
}

func addBias(x, b []float32) {
	if b != nil {
		add(x, b)
	}
}

func prepare(vs []*tensor.Vec, m *tensor.Matrix) {
	if m.Quantized() {
		for _, v := range vs {
			v.Prepare()
		}
	}
}

func make2(n, d int) [][]float32 {
	buf := make([]float32, n*d)
	out := make([][]float32, n)
	for i := range out {
		out[i] = buf[i*d : (i+1)*d : (i+1)*d]
	}
	return out
}

func vecs(n, d int) []*tensor.Vec {
	rows := make2(n, d)
	out := make([]*tensor.Vec, n)
	for i := range out {
		out[i] = &tensor.Vec{F: rows[i]}
	}
	return out
}
