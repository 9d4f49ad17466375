package model

// KV is one sequence's attention cache: per layer, K and V rows of KVDim
// float32 values for positions [0, Len). It grows as tokens are fed.
type KV struct {
	K, V  [][]float32
	Len   int
	kvDim int
}

// NewKV returns an empty cache for m with room for capacity positions.
func (m *Model) NewKV(capacity int) *KV {
	kv := &KV{K: make([][]float32, m.Blocks), V: make([][]float32, m.Blocks), kvDim: m.KVDim()}
	for l := range kv.K {
		kv.K[l] = make([]float32, 0, capacity*kv.kvDim)
		kv.V[l] = make([]float32, 0, capacity*kv.kvDim)
	}
	return kv
}

// Truncate drops positions from n on.
func (kv *KV) Truncate(n int) {
	kv.Len = min(kv.Len, n)
	for l := range kv.K {
		kv.K[l] = kv.K[l][:kv.Len*kv.kvDim]
		kv.V[l] = kv.V[l][:kv.Len*kv.kvDim]
	}
}

// Append adds n positions of K and V per layer, copied from k and v.
func (kv *KV) Append(k, v [][]float32, n int) {
	for l := range kv.K {
		kv.K[l] = append(kv.K[l], k[l][:n*kv.kvDim]...)
		kv.V[l] = append(kv.V[l], v[l][:n*kv.kvDim]...)
	}
	kv.Len += n
}

// SetLen makes the cache hold n positions, growing it with zeros or
// dropping positions, so that n rows can be copied in directly.
func (kv *KV) SetLen(n int) {
	kv.grow(n)
	for l := range kv.K {
		kv.K[l] = kv.K[l][:n*kv.kvDim]
		kv.V[l] = kv.V[l][:n*kv.kvDim]
	}
	kv.Len = n
}

// grow makes room for positions up to n, keeping the contents.
func (kv *KV) grow(n int) {
	for l := range kv.K {
		need := n * kv.kvDim
		if need > len(kv.K[l]) {
			kv.K[l] = append(kv.K[l], make([]float32, need-len(kv.K[l]))...)
			kv.V[l] = append(kv.V[l], make([]float32, need-len(kv.V[l]))...)
		}
	}
}

// Bytes is the cache's size in bytes.
func (kv *KV) Bytes() int64 { return int64(kv.Len) * int64(kv.kvDim) * 4 * 2 * int64(len(kv.K)) }
