// Package model loads llama-family GGUF models (llama, mistral, qwen2 and
// the files that share their tensor layout) and runs the transformer
// forward pass: RMSNorm, RoPE (normal and NeoX), grouped-query attention,
// SwiGLU, with float32 activations and fixed reduction orders.
package model

import (
	"errors"
	"fmt"

	"github.com/fakhq/fak/engines/native/gguf"
)

// Config is the shape of a model, read from GGUF metadata.
type Config struct {
	Arch       string
	Name       string
	Vocab      int
	Dim        int // embedding length
	Blocks     int
	Heads      int
	KVHeads    int
	HeadDim    int
	FFN        int
	Context    int
	Eps        float32
	RopeBase   float32
	RopeDim    int
	RopeNeoX   bool
	TiedOutput bool
}

// KVDim is the width of one position's K (or V) in one layer.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// KVBytesPerToken is the float32 KV footprint of one token across layers.
func (c *Config) KVBytesPerToken() int64 { return int64(c.Blocks) * 2 * int64(c.KVDim()) * 4 }

// Architectures the loader accepts, and whether each rotates NeoX-style.
var architectures = map[string]bool{
	"llama": false, "mistral": false, "granite": false,
	"qwen2": true, "qwen2moe": true, "phi3": true, "stablelm": true,
}

// ErrArchitecture is returned for a GGUF whose general.architecture the
// native engine does not run.
var ErrArchitecture = errors.New("unsupported architecture")

// ReadConfig reads the model shape from metadata, checking every key's
// presence and type.
func ReadConfig(md gguf.Metadata) (Config, error) {
	var c Config
	arch, err := md.String("general.architecture")
	if err != nil {
		return c, err
	}
	neox, ok := architectures[arch]
	if !ok {
		return c, fmt.Errorf("%w %q (the native engine runs llama, mistral and qwen2 style models)", ErrArchitecture, arch)
	}
	c.Arch, c.RopeNeoX = arch, neox
	c.Name, _ = md.String("general.name")
	p := arch + "."
	ints := []struct {
		key string
		dst *int
		req bool
	}{
		{p + "embedding_length", &c.Dim, true},
		{p + "block_count", &c.Blocks, true},
		{p + "feed_forward_length", &c.FFN, true},
		{p + "attention.head_count", &c.Heads, true},
		{p + "attention.head_count_kv", &c.KVHeads, false},
		{p + "context_length", &c.Context, true},
		{p + "rope.dimension_count", &c.RopeDim, false},
		{p + "vocab_size", &c.Vocab, false},
		{p + "attention.key_length", &c.HeadDim, false},
	}
	for _, f := range ints {
		v, err := md.Uint(f.key)
		if err != nil {
			var ke *gguf.KeyError
			if !f.req && errors.As(err, &ke) && ke.Msg == "missing" {
				continue
			}
			return c, err
		}
		if v == 0 || v > 1<<24 {
			return c, fmt.Errorf("metadata %s = %d is out of range", f.key, v)
		}
		*f.dst = int(v)
	}
	eps, err := md.Float(p + "attention.layer_norm_rms_epsilon")
	if err != nil {
		return c, err
	}
	c.Eps = float32(eps)
	c.RopeBase = 10000
	if b, err := md.Float(p + "rope.freq_base"); err == nil {
		c.RopeBase = float32(b)
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.HeadDim == 0 {
		if c.Dim%c.Heads != 0 {
			return c, fmt.Errorf("%sembedding_length %d is not divisible by head_count %d", p, c.Dim, c.Heads)
		}
		c.HeadDim = c.Dim / c.Heads
	}
	if c.Heads%c.KVHeads != 0 {
		return c, fmt.Errorf("%sattention.head_count %d is not a multiple of head_count_kv %d", p, c.Heads, c.KVHeads)
	}
	if c.RopeDim == 0 {
		c.RopeDim = c.HeadDim
	}
	if c.RopeDim > c.HeadDim || c.RopeDim%2 != 0 {
		return c, fmt.Errorf("%srope.dimension_count %d does not fit head size %d", p, c.RopeDim, c.HeadDim)
	}
	return c, nil
}
