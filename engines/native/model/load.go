package model

import (
	"fmt"
	"math"

	"github.com/fakhq/fak/engines/native/gguf"
	"github.com/fakhq/fak/engines/native/tensor"
	"github.com/fakhq/fak/engines/native/tokenizer"
)

// Layer holds one transformer block's weights.
type Layer struct {
	AttnNorm       []float32
	Q, K, V, O     *tensor.Matrix
	QBias, KBias   []float32 // nil when the model has none (qwen2 has them)
	VBias          []float32
	FFNNorm        []float32
	Gate, Up, Down *tensor.Matrix
}

// Model is a loaded model: config, tokenizer, weights. It is immutable
// after Load and safe for concurrent use.
type Model struct {
	Config
	Tok          *tokenizer.Tokenizer
	Template     tokenizer.Template
	ChatTemplate string // the raw Jinja text, when the file has one
	Embd         *tensor.Matrix
	Layers       []Layer
	OutNorm      []float32
	Out          *tensor.Matrix
	Params       int64
	WeightBytes  int64

	file *gguf.File
}

// Open loads a model from a GGUF file, memory-mapping its weights.
func Open(path string) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := Load(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return m, nil
}

// Close releases the model's file mapping.
func (m *Model) Close() error {
	if m.file == nil {
		return nil
	}
	return m.file.Close()
}

// Load builds a model from a parsed GGUF file. The weights alias the file.
func Load(f *gguf.File) (*Model, error) {
	cfg, err := ReadConfig(f.Metadata)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromGGUF(f.Metadata)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if cfg.Vocab == 0 {
		cfg.Vocab = tok.VocabSize()
	}
	m := &Model{Config: cfg, Tok: tok, file: f}
	m.ChatTemplate, _ = f.Metadata.String("tokenizer.chat_template")
	m.Template = tokenizer.DetectTemplate(m.ChatTemplate)
	l := loader{f: f, m: m}
	kv := cfg.KVDim()
	m.Embd = l.matrix("token_embd.weight", cfg.Vocab, cfg.Dim)
	m.OutNorm = l.vector("output_norm.weight", cfg.Dim)
	if _, ok := f.Tensor("output.weight"); ok {
		m.Out = l.matrix("output.weight", cfg.Vocab, cfg.Dim)
	} else {
		m.Out, m.TiedOutput = m.Embd, true
	}
	m.Layers = make([]Layer, cfg.Blocks)
	for i := range m.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		L := &m.Layers[i]
		L.AttnNorm = l.vector(p+"attn_norm.weight", cfg.Dim)
		L.Q = l.matrix(p+"attn_q.weight", cfg.Heads*cfg.HeadDim, cfg.Dim)
		L.K = l.matrix(p+"attn_k.weight", kv, cfg.Dim)
		L.V = l.matrix(p+"attn_v.weight", kv, cfg.Dim)
		L.O = l.matrix(p+"attn_output.weight", cfg.Dim, cfg.Heads*cfg.HeadDim)
		L.QBias = l.optVector(p+"attn_q.bias", cfg.Heads*cfg.HeadDim)
		L.KBias = l.optVector(p+"attn_k.bias", kv)
		L.VBias = l.optVector(p+"attn_v.bias", kv)
		L.FFNNorm = l.vector(p+"ffn_norm.weight", cfg.Dim)
		L.Gate = l.matrix(p+"ffn_gate.weight", cfg.FFN, cfg.Dim)
		L.Up = l.matrix(p+"ffn_up.weight", cfg.FFN, cfg.Dim)
		L.Down = l.matrix(p+"ffn_down.weight", cfg.Dim, cfg.FFN)
	}
	if l.err != nil {
		return nil, l.err
	}
	for _, t := range f.Tensors {
		m.WeightBytes += int64(len(t.Data))
		m.Params += int64(t.Elements())
	}
	return m, nil
}

type loader struct {
	f   *gguf.File
	m   *Model
	err error
}

func (l *loader) tensor(name string, dims ...int) *gguf.TensorInfo {
	if l.err != nil {
		return nil
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		l.err = fmt.Errorf("tensor %s is missing", name)
		return nil
	}
	if len(t.Dims) != len(dims) {
		l.err = fmt.Errorf("tensor %s has dims %v, want %v", name, t.Dims, dims)
		return nil
	}
	for i, d := range dims {
		if t.Dims[i] != uint64(d) {
			l.err = fmt.Errorf("tensor %s has dims %v, want %v", name, t.Dims, dims)
			return nil
		}
	}
	return t
}

// matrix loads a weight of rows x cols (GGUF dims [cols, rows]).
func (l *loader) matrix(name string, rows, cols int) *tensor.Matrix {
	t := l.tensor(name, cols, rows)
	if t == nil {
		return nil
	}
	m, err := tensor.NewMatrix(name, t.Type, rows, cols, t.Data)
	if err != nil {
		l.err = err
	}
	return m
}

func (l *loader) vector(name string, n int) []float32 {
	t := l.tensor(name, n)
	if t == nil {
		return nil
	}
	out := make([]float32, n)
	if err := tensor.Decode(t.Type, t.Data, out); err != nil {
		l.err = fmt.Errorf("tensor %s: %w", name, err)
		return nil
	}
	for i, v := range out {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			l.err = fmt.Errorf("tensor %s: element %d is %v", name, i, v)
			return nil
		}
	}
	return out
}

func (l *loader) optVector(name string, n int) []float32 {
	if _, ok := l.f.Tensor(name); !ok {
		return nil
	}
	return l.vector(name, n)
}
