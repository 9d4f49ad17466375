package tokenizer

import (
	"container/heap"
	"unicode/utf8"
)

// spm is SentencePiece BPE: start from single characters and repeatedly
// merge the adjacent pair whose concatenation is in the vocabulary with the
// highest score (leftmost on ties). Symbols left outside the vocabulary fall
// back to byte tokens.
func (t *Tokenizer) spm(out []int, s string) []int {
	type sym struct {
		start, end int
		prev, next int
		alive      bool
	}
	syms := make([]sym, 0, len(s))
	for i := 0; i < len(s); {
		_, n := utf8.DecodeRuneInString(s[i:])
		syms = append(syms, sym{start: i, end: i + n, prev: len(syms) - 1, next: len(syms) + 1, alive: true})
		i += n
	}
	if len(syms) == 0 {
		return out
	}
	syms[len(syms)-1].next = -1
	h := &bigramHeap{}
	try := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		text := s[syms[l].start:syms[r].end]
		if id, ok := t.index[text]; ok {
			score := float32(0)
			if t.Scores != nil {
				score = t.Scores[id]
			}
			heap.Push(h, bigram{left: l, right: r, score: score, size: len(text)})
		}
	}
	for i := 1; i < len(syms); i++ {
		try(i-1, i)
	}
	for h.Len() > 0 {
		bg := heap.Pop(h).(bigram)
		l, r := &syms[bg.left], &syms[bg.right]
		// Skip stale entries: one side merged away or grown since.
		if !l.alive || !r.alive || l.next != bg.right || r.end-l.start != bg.size {
			continue
		}
		l.end = r.end
		r.alive = false
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = bg.left
		}
		try(l.prev, bg.left)
		try(bg.left, l.next)
	}
	for i := 0; i >= 0; i = syms[i].next {
		piece := s[syms[i].start:syms[i].end]
		if id, ok := t.index[piece]; ok {
			out = append(out, id)
			continue
		}
		out = t.byteFallback(out, piece)
	}
	return out
}

type bigram struct {
	left, right int
	score       float32
	size        int
}

type bigramHeap []bigram

func (h bigramHeap) Len() int { return len(h) }
func (h bigramHeap) Less(i, j int) bool {
	if h[i].score != h[j].score {
		return h[i].score > h[j].score
	}
	return h[i].left < h[j].left
}
func (h bigramHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *bigramHeap) Push(x any)   { *h = append(*h, x.(bigram)) }
func (h *bigramHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
