package tensor

import (
	"runtime"
	"sync"
)

// Pool runs index ranges on a fixed set of worker goroutines. The split of
// work into ranges depends only on the problem size, never on the number of
// workers, and each output is written by exactly one range, so results do
// not depend on GOMAXPROCS.
type Pool struct {
	workers int
	tasks   chan func()
}

// NewPool starts n workers (n <= 0 means GOMAXPROCS).
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	p := &Pool{workers: n, tasks: make(chan func(), 4*n)}
	for i := 0; i < n; i++ {
		go func() {
			for f := range p.tasks {
				f()
			}
		}()
	}
	return p
}

// Workers is the number of worker goroutines.
func (p *Pool) Workers() int { return p.workers }

// Close stops the workers. The pool must not be used after Close.
func (p *Pool) Close() { close(p.tasks) }

// For calls body(lo, hi) over [0, n) split into ranges of at most grain,
// and waits. The ranges are fixed by n and grain alone.
func (p *Pool) For(n, grain int, body func(lo, hi int)) {
	if grain < 1 {
		grain = 1
	}
	if p == nil || n <= grain || p.workers == 1 {
		for lo := 0; lo < n; lo += grain {
			body(lo, min(lo+grain, n))
		}
		return
	}
	var wg sync.WaitGroup
	chunks := (n + grain - 1) / grain
	// The calling goroutine takes a share too, so a pool of two workers on
	// two cores does not leave one core idle while it waits.
	wg.Add(chunks - 1)
	for c := 1; c < chunks; c++ {
		lo := c * grain
		p.tasks <- func() { body(lo, min(lo+grain, n)); wg.Done() }
	}
	body(0, min(grain, n))
	wg.Wait()
}

// MulVecs computes out[b][r] = dot(row r of m, xs[b]) for every vector in
// the batch. Rows are split across workers; each element is one RowDot, so
// the result for a vector is the same whatever else is in the batch.
// Quantised matrices need Prepare'd vectors.
func MulVecs(p *Pool, m *Matrix, xs []*Vec, outs [][]float32) {
	// About 64 KiB of weights per range: big enough to amortise the
	// hand-off, small enough to balance two to a few dozen cores.
	grain := max(1, (64<<10)/max(1, m.RowBytes()))
	grain = min(grain, max(1, m.Rows/8))
	p.For(m.Rows, grain, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for b, x := range xs {
				outs[b][r] = m.RowDot(r, x)
			}
		}
	})
}
