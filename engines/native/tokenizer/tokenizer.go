// Package tokenizer implements the two tokenizer families llama-style GGUF
// files carry: "llama" (SentencePiece BPE over scores, with byte fallback)
// and "gpt2" (byte-level BPE over ranked merges).
package tokenizer

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/fakhq/fak/engines/native/gguf"
)

// Token types as GGUF stores them in tokenizer.ggml.token_type.
const (
	TypeNormal      = 1
	TypeUnknown     = 2
	TypeControl     = 3
	TypeUserDefined = 4
	TypeUnused      = 5
	TypeByte        = 6
)

// Tokenizer turns text into token ids and ids back into bytes. It is safe
// for concurrent use after construction.
type Tokenizer struct {
	Model          string // "llama" or "gpt2"
	Pre            string // gpt2 pre-tokenizer name (tokenizer.ggml.pre)
	Tokens         []string
	Scores         []float32
	Types          []int32
	BOS, EOS, UNK  int // -1 when absent
	EOT            int // end-of-turn token, -1 when absent
	AddBOS         bool
	AddSpacePrefix bool

	index    map[string]int
	byteID   [256]int // llama: id of <0xXX>; -1 when absent
	ranks    map[string]int
	specials []string // control and user-defined tokens, longest first
	pieces   [][]byte // decoded bytes of each token
}

// FromGGUF builds the tokenizer a GGUF file describes.
func FromGGUF(md gguf.Metadata) (*Tokenizer, error) {
	model, err := md.String("tokenizer.ggml.model")
	if err != nil {
		return nil, err
	}
	toks, err := md.StringArray("tokenizer.ggml.tokens")
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{Model: model, Tokens: toks, BOS: -1, EOS: -1, UNK: -1, EOT: -1}
	if s, err := md.FloatArray("tokenizer.ggml.scores"); err == nil {
		if len(s) != len(toks) {
			return nil, fmt.Errorf("tokenizer.ggml.scores has %d entries for %d tokens", len(s), len(toks))
		}
		t.Scores = s
	}
	if ty, err := md.IntArray("tokenizer.ggml.token_type"); err == nil {
		if len(ty) != len(toks) {
			return nil, fmt.Errorf("tokenizer.ggml.token_type has %d entries for %d tokens", len(ty), len(toks))
		}
		t.Types = make([]int32, len(ty))
		for i, v := range ty {
			t.Types[i] = int32(v)
		}
	}
	ids := map[string]*int{
		"tokenizer.ggml.bos_token_id": &t.BOS, "tokenizer.ggml.eos_token_id": &t.EOS,
		"tokenizer.ggml.unknown_token_id": &t.UNK, "tokenizer.ggml.eot_token_id": &t.EOT,
	}
	for key, dst := range ids {
		if v, err := md.Uint(key); err == nil {
			if v >= uint64(len(toks)) {
				return nil, fmt.Errorf("%s = %d is outside the vocabulary of %d", key, v, len(toks))
			}
			*dst = int(v)
		}
	}
	switch model {
	case "llama":
		t.AddBOS = md.BoolOr("tokenizer.ggml.add_bos_token", true)
		t.AddSpacePrefix = md.BoolOr("tokenizer.ggml.add_space_prefix", true)
	case "gpt2":
		t.AddBOS = md.BoolOr("tokenizer.ggml.add_bos_token", false)
		t.Pre, _ = md.String("tokenizer.ggml.pre")
		merges, err := md.StringArray("tokenizer.ggml.merges")
		if err != nil {
			return nil, err
		}
		t.ranks = make(map[string]int, len(merges))
		for i, m := range merges {
			if _, dup := t.ranks[m]; !dup {
				t.ranks[m] = i
			}
		}
	default:
		return nil, fmt.Errorf("tokenizer.ggml.model %q is not supported (supported: llama, gpt2)", model)
	}
	t.build()
	return t, nil
}

func (t *Tokenizer) typeOf(id int) int32 {
	if t.Types == nil {
		return TypeNormal
	}
	return t.Types[id]
}

func (t *Tokenizer) build() {
	t.index = make(map[string]int, len(t.Tokens))
	for i := range t.byteID {
		t.byteID[i] = -1
	}
	t.pieces = make([][]byte, len(t.Tokens))
	for id, s := range t.Tokens {
		if _, dup := t.index[s]; !dup {
			t.index[s] = id
		}
		typ := t.typeOf(id)
		if (typ == TypeControl || typ == TypeUserDefined) && len(s) > 1 {
			t.specials = append(t.specials, s)
		}
		switch {
		case typ == TypeControl:
			t.pieces[id] = nil // control tokens print nothing
		case t.Model == "llama" && typ == TypeByte:
			if b, ok := parseByteToken(s); ok {
				t.byteID[b] = id
				t.pieces[id] = []byte{b}
			}
		case t.Model == "llama":
			t.pieces[id] = []byte(strings.ReplaceAll(s, "\u2581", " "))
		case typ == TypeUserDefined:
			t.pieces[id] = []byte(s)
		default:
			t.pieces[id] = unicodeToBytes(s)
		}
	}
	sort.Slice(t.specials, func(i, j int) bool { return len(t.specials[i]) > len(t.specials[j]) })
}

func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || !strings.HasPrefix(s, "<0x") || s[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(s[3:5], 16, 8)
	return byte(v), err == nil
}

// VocabSize is the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.Tokens) }

// Piece returns the bytes token id decodes to (nil for control tokens).
func (t *Tokenizer) Piece(id int) []byte {
	if id < 0 || id >= len(t.pieces) {
		return nil
	}
	return t.pieces[id]
}

// Decode concatenates the pieces of ids.
func (t *Tokenizer) Decode(ids []int) []byte {
	var out []byte
	for _, id := range ids {
		out = append(out, t.Piece(id)...)
	}
	return out
}

// IsEndOfGeneration reports whether id ends a completion (EOS or EOT).
func (t *Tokenizer) IsEndOfGeneration(id int) bool {
	return id >= 0 && (id == t.EOS || id == t.EOT)
}

// Encode tokenizes text. With addBOS the BOS token is prepended when the
// model asks for one. Control tokens written literally in text (such as
// "<|im_start|>") become their ids, as chat templates need.
func (t *Tokenizer) Encode(text string, addBOS bool) []int {
	var out []int
	if addBOS && t.AddBOS && t.BOS >= 0 {
		out = append(out, t.BOS)
	}
	first := true
	for len(text) > 0 {
		i, special := t.nextSpecial(text)
		if i > 0 {
			out = t.encodeSegment(out, text[:i], first)
			first = false
		}
		if special == "" {
			break
		}
		out = append(out, t.index[special])
		text = text[i+len(special):]
		first = false
	}
	return out
}

// nextSpecial finds the earliest special token in s; i is len(s) when none.
func (t *Tokenizer) nextSpecial(s string) (int, string) {
	best, tok := len(s), ""
	for _, sp := range t.specials {
		if i := strings.Index(s[:min(len(s), best+len(sp))], sp); i >= 0 && (i < best || (i == best && len(sp) > len(tok))) {
			best, tok = i, sp
		}
	}
	return best, tok
}

func (t *Tokenizer) encodeSegment(out []int, s string, first bool) []int {
	if t.Model == "gpt2" {
		for _, word := range preTokenize(s, t.Pre) {
			out = t.bpe(out, word)
		}
		return out
	}
	if first && t.AddSpacePrefix {
		s = " " + s
	}
	return t.spm(out, strings.ReplaceAll(s, " ", "\u2581"))
}

// byteFallback appends the byte tokens of s, or UNK where a byte has none.
func (t *Tokenizer) byteFallback(out []int, s string) []int {
	for i := 0; i < len(s); i++ {
		if id := t.byteID[s[i]]; id >= 0 {
			out = append(out, id)
		} else if t.UNK >= 0 {
			out = append(out, t.UNK)
		}
	}
	return out
}
