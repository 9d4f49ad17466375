// Package kvcache keeps attention KV for served token prefixes in a radix
// tree: longest-prefix match, edge split on insert, reference-counted leases
// that pin a path while a request or session uses it, and LRU eviction of
// unpinned leaves under a byte budget. It is the native engine's native_kv
// reuse class.
package kvcache

import (
	"fmt"
	"sync"
)

// Tree is a radix tree over token ids whose edges carry the K and V rows of
// their tokens for every layer. It is safe for concurrent use.
type Tree struct {
	mu     sync.Mutex
	layers int
	width  int // float32 values per token per layer, for K and for V each
	budget int64
	root   *node
	clock  uint64
	stats  Stats
}

type node struct {
	parent   *node
	children map[int]*node // keyed by the first token of the child's edge
	tokens   []int
	k, v     [][]float32 // per layer, len(tokens)*width values
	refs     int
	lastUsed uint64
}

// Stats are the tree's counters since it was made.
type Stats struct {
	Queries       int64 // Match calls
	Hits          int64 // Match calls that reused at least one token
	QueryTokens   int64 // tokens offered to Match
	HitTokens     int64 // tokens Match found cached
	Inserted      int64 // tokens whose KV was stored
	Evictions     int64 // nodes evicted
	EvictedTokens int64
	Bytes         int64 // KV bytes held now
	Nodes         int   // nodes held now (root excluded)
	Pinned        int   // nodes held by a lease now
}

// New returns an empty tree for a model with the given layer count and
// per-token K (or V) width, evicting down to budgetBytes.
func New(layers, width int, budgetBytes int64) *Tree {
	return &Tree{layers: layers, width: width, budget: budgetBytes, root: &node{children: map[int]*node{}}}
}

// TokenBytes is the KV footprint of one token.
func (t *Tree) TokenBytes() int64 { return int64(t.layers) * int64(t.width) * 4 * 2 }

// Budget is the byte budget eviction keeps to.
func (t *Tree) Budget() int64 { return t.budget }

// Stats returns a snapshot of the counters.
func (t *Tree) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stats
	s.Pinned = 0
	t.walk(t.root, func(n *node) {
		if n.refs > 0 {
			s.Pinned++
		}
	})
	return s
}

func (t *Tree) walk(n *node, f func(*node)) {
	for _, c := range n.children {
		f(c)
		t.walk(c, f)
	}
}

func (t *Tree) nodeBytes(n *node) int64 { return int64(len(n.tokens)) * t.TokenBytes() }

// Lease pins the path of a matched or inserted prefix: none of its nodes is
// evicted until Release. Its KV can be copied out with CopyTo.
type Lease struct {
	t    *Tree
	node *node // deepest node, possibly matched only in part
	n    int
}

// Len is the number of tokens the lease covers.
func (l *Lease) Len() int { return l.n }

// Release unpins the path. It is safe to call more than once.
func (l *Lease) Release() {
	if l == nil || l.t == nil {
		return
	}
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	for n := l.node; n != nil && n != l.t.root; n = n.parent {
		n.refs--
	}
	l.t = nil
}

func (t *Tree) lease(n *node, length int) *Lease {
	for p := n; p != nil && p != t.root; p = p.parent {
		p.refs++
	}
	return &Lease{t: t, node: n, n: length}
}

// CopyTo copies the leased prefix's K and V into k[layer] and v[layer],
// which must hold at least Len()*width values.
func (l *Lease) CopyTo(k, v [][]float32) {
	if l.n == 0 {
		return
	}
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	var path []*node
	for n := l.node; n != l.t.root; n = n.parent {
		path = append(path, n)
	}
	w, at := l.t.width, 0
	for i := len(path) - 1; i >= 0 && at < l.n; i-- {
		n := path[i]
		take := min(len(n.tokens), l.n-at)
		for layer := range k {
			copy(k[layer][at*w:(at+take)*w], n.k[layer][:take*w])
			copy(v[layer][at*w:(at+take)*w], n.v[layer][:take*w])
		}
		at += take
	}
}

// Match finds the longest cached prefix of tokens[:limit] and leases it.
// The whole of tokens counts as the query in the statistics. The caller
// must Release the lease.
func (t *Tree) Match(tokens []int, limit int) *Lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clock++
	limit = max(0, min(limit, len(tokens)))
	cur, n := t.root, 0
	for n < limit {
		child := cur.children[tokens[n]]
		if child == nil {
			break
		}
		c := commonPrefix(child.tokens, tokens[n:limit])
		child.lastUsed = t.clock
		cur, n = child, n+c
		if c < len(child.tokens) {
			break
		}
	}
	t.stats.Queries++
	t.stats.QueryTokens += int64(len(tokens))
	if n > 0 {
		t.stats.Hits++
		t.stats.HitTokens += int64(n)
	}
	return t.lease(cur, n)
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Insert stores the KV of tokens (k[layer] and v[layer] hold len(tokens)
// rows), sharing whatever prefix is cached already and splitting an edge
// where the new sequence diverges inside it. Only the new suffix's rows are
// copied. It returns a lease on the whole sequence, then evicts to budget.
func (t *Tree) Insert(tokens []int, k, v [][]float32) *Lease {
	if len(k) != t.layers || len(v) != t.layers {
		panic(fmt.Sprintf("kvcache: insert with %d/%d layers, tree has %d", len(k), len(v), t.layers))
	}
	w := t.width
	for l := range k {
		if len(k[l]) < len(tokens)*w || len(v[l]) < len(tokens)*w {
			panic(fmt.Sprintf("kvcache: insert of %d tokens with %d K values in layer %d", len(tokens), len(k[l]), l))
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clock++
	cur, n := t.root, 0
	for n < len(tokens) {
		child := cur.children[tokens[n]]
		if child == nil {
			leaf := &node{parent: cur, children: map[int]*node{}, tokens: append([]int(nil), tokens[n:]...), lastUsed: t.clock}
			leaf.k, leaf.v = rows(k, n, len(tokens), w), rows(v, n, len(tokens), w)
			cur.children[tokens[n]] = leaf
			t.stats.Bytes += t.nodeBytes(leaf)
			t.stats.Nodes++
			t.stats.Inserted += int64(len(leaf.tokens))
			cur, n = leaf, len(tokens)
			break
		}
		c := commonPrefix(child.tokens, tokens[n:])
		if c < len(child.tokens) {
			child = t.split(child, c)
		}
		child.lastUsed = t.clock
		cur, n = child, n+c
	}
	l := t.lease(cur, len(tokens))
	t.evict()
	return l
}

// split cuts n's edge after c tokens and returns the new upper node. Leases
// through n pass through the new node too, so it inherits n's count.
func (t *Tree) split(n *node, c int) *node {
	w := t.width
	up := &node{parent: n.parent, children: map[int]*node{}, tokens: append([]int(nil), n.tokens[:c]...), refs: n.refs, lastUsed: n.lastUsed}
	up.k, up.v = rows(n.k, 0, c, w), rows(n.v, 0, c, w)
	n.k, n.v = rows(n.k, c, len(n.tokens), w), rows(n.v, c, len(n.tokens), w)
	n.tokens = append([]int(nil), n.tokens[c:]...)
	n.parent.children[up.tokens[0]] = up
	up.children[n.tokens[0]] = n
	n.parent = up
	t.stats.Nodes++
	return up
}

// rows copies rows [from, to) of every layer into fresh slices, so that a
// node owns its memory and evicting it frees exactly its bytes.
func rows(src [][]float32, from, to, w int) [][]float32 {
	out := make([][]float32, len(src))
	for l := range src {
		out[l] = append([]float32(nil), src[l][from*w:to*w]...)
	}
	return out
}

// evict removes least recently used unpinned leaves until the tree fits
// its budget (or nothing unpinned is left).
func (t *Tree) evict() {
	for t.stats.Bytes > t.budget {
		var victim *node
		t.walk(t.root, func(n *node) {
			if n.refs == 0 && len(n.children) == 0 && (victim == nil || n.lastUsed < victim.lastUsed) {
				victim = n
			}
		})
		if victim == nil {
			return
		}
		t.remove(victim)
		t.stats.Evictions++
		t.stats.EvictedTokens += int64(len(victim.tokens))
	}
}

func (t *Tree) remove(n *node) {
	delete(n.parent.children, n.tokens[0])
	t.stats.Bytes -= t.nodeBytes(n)
	t.stats.Nodes--
}

// Forget removes the unpinned nodes that only the exact sequence tokens
// uses, from its end upwards, stopping at a node that is pinned, shared
// with another sequence, or extends past tokens. It returns the number of
// tokens whose KV was freed.
func (t *Tree) Forget(tokens []int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur, n := t.root, 0
	for n < len(tokens) {
		child := cur.children[tokens[n]]
		if child == nil || n+len(child.tokens) > len(tokens) || commonPrefix(child.tokens, tokens[n:]) < len(child.tokens) {
			return 0
		}
		cur, n = child, n+len(child.tokens)
	}
	freed := 0
	for cur != t.root && cur.refs == 0 && len(cur.children) == 0 {
		p := cur.parent
		t.remove(cur)
		freed += len(cur.tokens)
		cur = p
	}
	return freed
}

// Flush evicts every unpinned node, as a cold control needs, and returns
// the number of tokens freed.
func (t *Tree) Flush() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	before := t.stats.EvictedTokens
	budget := t.budget
	t.budget = 0
	t.evict()
	t.budget = budget
	return t.stats.EvictedTokens - before
}
