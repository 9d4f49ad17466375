package kvcache

import (
	"testing"
)

// kvFor makes per-layer rows whose values encode (layer, token id), so a
// copy from the wrong place shows up as a wrong value.
func kvFor(tokens []int, layers, w int) ([][]float32, [][]float32) {
	k, v := make([][]float32, layers), make([][]float32, layers)
	for l := range k {
		for _, tok := range tokens {
			for j := 0; j < w; j++ {
				k[l] = append(k[l], float32(l*100000+tok*10+j))
				v[l] = append(v[l], -float32(l*100000+tok*10+j))
			}
		}
	}
	return k, v
}

func toks(s string) []int {
	out := make([]int, len(s))
	for i := range s {
		out[i] = int(s[i])
	}
	return out
}

func TestMatchSplitAndCopy(t *testing.T) {
	const layers, w = 2, 3
	tr := New(layers, w, 1<<30)
	a := toks("the cat sat")
	k, v := kvFor(a, layers, w)
	tr.Insert(a, k, v).Release()
	b := toks("the dog ran")
	k, v = kvFor(b, layers, w)
	tr.Insert(b, k, v).Release() // splits "the cat sat" after "the " (4 tokens)

	tests := []struct {
		name  string
		query string
		limit int
		want  int
	}{
		{"shared prefix then divergence", "the cow", 100, 5},
		{"whole first sequence", "the cat sat down", 100, 11},
		{"limit cuts the match", "the cat sat", 10, 10},
		{"second branch", "the dog ran", 100, 11},
		{"nothing in common", "a cat", 100, 0},
		{"match ends inside an edge", "the ca", 100, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := toks(tc.query)
			l := tr.Match(q, tc.limit)
			defer l.Release()
			if l.Len() != tc.want {
				t.Fatalf("matched %d tokens, want %d", l.Len(), tc.want)
			}
			gotK, gotV := make([][]float32, layers), make([][]float32, layers)
			for i := range gotK {
				gotK[i], gotV[i] = make([]float32, l.Len()*w), make([]float32, l.Len()*w)
			}
			l.CopyTo(gotK, gotV)
			wantK, wantV := kvFor(q[:l.Len()], layers, w)
			for i := range gotK {
				for j := range gotK[i] {
					if gotK[i][j] != wantK[i][j] || gotV[i][j] != wantV[i][j] {
						t.Fatalf("layer %d value %d: got %v/%v want %v/%v", i, j, gotK[i][j], gotV[i][j], wantK[i][j], wantV[i][j])
					}
				}
			}
		})
	}
	s := tr.Stats()
	if s.Nodes != 3 {
		t.Errorf("nodes = %d, want 3 (shared edge plus two branches)", s.Nodes)
	}
	if s.Bytes != int64(len(a)+len(b)-4)*tr.TokenBytes() {
		t.Errorf("bytes = %d, want %d: the shared prefix must be stored once", s.Bytes, int64(len(a)+len(b)-4)*tr.TokenBytes())
	}
	if s.Queries != int64(len(tests)) || s.Hits != int64(len(tests)-1) {
		t.Errorf("queries/hits = %d/%d, want %d/%d", s.Queries, s.Hits, len(tests), len(tests)-1)
	}
}

func TestEvictionIsLRUAndRespectsLeases(t *testing.T) {
	const layers, w = 1, 2
	tr := New(layers, w, 0)
	tokBytes := tr.TokenBytes()
	tr.budget = 8 * tokBytes

	insert := func(s string) *Lease {
		q := toks(s)
		k, v := kvFor(q, layers, w)
		return tr.Insert(q, k, v)
	}
	insert("aaaa").Release()
	pinned := insert("bbbb") // held
	// Touch "aaaa" so that it is more recent than nothing else unpinned.
	tr.Match(toks("aaaa"), 4).Release()
	insert("cccc").Release() // 12 tokens > 8: evict the LRU unpinned leaf
	if got := tr.Match(toks("aaaa"), 4); got.Len() != 0 {
		t.Errorf("aaaa (least recently used) survived eviction with %d tokens", got.Len())
		got.Release()
	}
	if got := tr.Match(toks("bbbb"), 4); got.Len() != 4 {
		t.Errorf("pinned bbbb was evicted (matched %d)", got.Len())
	} else {
		got.Release()
	}
	pinned.Release()
	pinned.Release() // idempotent
	if tr.Stats().Pinned != 0 {
		t.Errorf("pinned nodes after release: %d", tr.Stats().Pinned)
	}
	insert("dddd").Release()
	if b := tr.Stats().Bytes; b > tr.budget {
		t.Errorf("bytes %d over budget %d with nothing pinned", b, tr.budget)
	}
	if tr.Stats().Evictions < 2 {
		t.Errorf("evictions = %d, want at least 2", tr.Stats().Evictions)
	}
}

func TestSplitKeepsLeaseCounts(t *testing.T) {
	tr := New(1, 1, 1<<30)
	q := toks("abcdef")
	k, v := kvFor(q, 1, 1)
	held := tr.Insert(q, k, v)
	// Inserting "abcxyz" splits the held edge; the new upper node is on the
	// held path and must count as pinned.
	q2 := toks("abcxyz")
	k2, v2 := kvFor(q2, 1, 1)
	tr.Insert(q2, k2, v2).Release()
	if p := tr.Stats().Pinned; p != 2 {
		t.Fatalf("pinned = %d, want 2 (the split upper node and the held tail)", p)
	}
	tr.budget = 0
	tr.evict()
	if got := tr.Match(q, 6); got.Len() != 6 {
		t.Fatalf("held sequence evicted: matched %d", got.Len())
	} else {
		got.Release()
	}
	held.Release()
	tr.evict()
	if s := tr.Stats(); s.Nodes != 0 || s.Bytes != 0 {
		t.Fatalf("after release and eviction to 0: %+v", s)
	}
}

func TestForget(t *testing.T) {
	tr := New(1, 1, 1<<30)
	for _, s := range []string{"shared-a", "shared-b"} {
		q := toks(s)
		k, v := kvFor(q, 1, 1)
		tr.Insert(q, k, v).Release()
	}
	if n := tr.Forget(toks("shared-a")); n != 1 {
		t.Fatalf("forgot %d tokens, want 1 (only the private tail)", n)
	}
	if got := tr.Match(toks("shared-b"), 8); got.Len() != 8 {
		t.Fatalf("the other sequence lost tokens: %d", got.Len())
	} else {
		got.Release()
	}
	if n := tr.Forget(toks("shared")); n != 0 {
		t.Fatalf("forgot %d tokens of a prefix another sequence extends", n)
	}
}
