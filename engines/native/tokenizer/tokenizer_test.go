package tokenizer

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/fakhq/fak/engines/native/gguf"
)

// spmVocab is a byte-fallback SentencePiece vocabulary with a few merges.
func spmVocab(t *testing.T) *Tokenizer {
	t.Helper()
	toks := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3}
	for b := 0; b < 256; b++ {
		toks = append(toks, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
	}
	words := []string{"\u2581", "h", "e", "l", "o", "he", "ll", "llo", "hello", "\u2581hello", "<|im_start|>"}
	scores := make([]float32, len(toks))
	for i, w := range words {
		toks = append(toks, w)
		types = append(types, 1)
		scores = append(scores, float32(i)) // longer merges score higher
	}
	types[len(types)-1] = 3 // <|im_start|> is a control token
	md := gguf.Metadata{
		{Key: "tokenizer.ggml.model", Value: gguf.Str("llama")},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Strings(toks)},
		{Key: "tokenizer.ggml.scores", Value: gguf.Float32s(scores)},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Int32s(types)},
		{Key: "tokenizer.ggml.bos_token_id", Value: gguf.U32(1)},
		{Key: "tokenizer.ggml.eos_token_id", Value: gguf.U32(2)},
		{Key: "tokenizer.ggml.unknown_token_id", Value: gguf.U32(0)},
	}
	tk, err := FromGGUF(md)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func pieces(tk *Tokenizer, ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = tk.Tokens[id]
	}
	return out
}

func TestSPM(t *testing.T) {
	tk := spmVocab(t)
	tests := []struct {
		name, in string
		want     []string
	}{
		{"merges to the best-scoring piece", "hello", []string{"<s>", "\u2581hello"}},
		{"space becomes ▁", "hello hello", []string{"<s>", "\u2581hello", "\u2581hello"}},
		{"byte fallback for unknown characters", "hé", []string{"<s>", "\u2581", "h", "<0xC3>", "<0xA9>"}},
		{"control token written in text", "<|im_start|>hello", []string{"<s>", "<|im_start|>", "hello"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ids := tk.Encode(tc.in, true)
			if got := pieces(tk, ids); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Encode(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	// Decoding returns the text (with the leading space SentencePiece adds).
	if got := string(tk.Decode(tk.Encode("hello hé", false))); got != " hello hé" {
		t.Fatalf("decode = %q", got)
	}
}

// gpt2Vocab is a byte-level BPE vocabulary: every byte symbol plus merges
// for "hello" and " world".
func gpt2Vocab(t *testing.T) *Tokenizer {
	t.Helper()
	var toks []string
	for b := 0; b < 256; b++ {
		toks = append(toks, string(byteToRune[b]))
	}
	merges := []string{"h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld"}
	for _, m := range merges {
		toks = append(toks, strings.ReplaceAll(m, " ", ""))
	}
	toks = append(toks, "<|endoftext|>")
	types := make([]int32, len(toks))
	for i := range types {
		types[i] = 1
	}
	types[len(types)-1] = 3
	md := gguf.Metadata{
		{Key: "tokenizer.ggml.model", Value: gguf.Str("gpt2")},
		{Key: "tokenizer.ggml.pre", Value: gguf.Str("gpt2")},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Strings(toks)},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Int32s(types)},
		{Key: "tokenizer.ggml.merges", Value: gguf.Strings(merges)},
		{Key: "tokenizer.ggml.eos_token_id", Value: gguf.U32(uint32(len(toks) - 1))},
	}
	tk, err := FromGGUF(md)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestGPT2BPE(t *testing.T) {
	tk := gpt2Vocab(t)
	ids := tk.Encode("hello world!<|endoftext|>", true)
	want := []string{"hello", "Ġworld", "!", "<|endoftext|>"}
	if got := pieces(tk, ids); !reflect.DeepEqual(got, want) {
		t.Fatalf("pieces = %q, want %q", got, want)
	}
	if got := string(tk.Decode(tk.Encode("héllo  wörld\n", false))); got != "héllo  wörld\n" {
		t.Fatalf("round trip = %q", got)
	}
	if !tk.IsEndOfGeneration(ids[len(ids)-1]) {
		t.Fatal("<|endoftext|> is not end of generation")
	}
}

func TestPreTokenize(t *testing.T) {
	tests := []struct {
		pre, in string
		want    []string
	}{
		{"gpt2", "Hello world's  end 2024!", []string{"Hello", " world", "'s", " ", " end", " 2024", "!"}},
		{"llama-bpe", "I'M 12345 ok\n\nnext", []string{"I", "'M", " ", "123", "45", " ok", "\n\n", "next"}},
	}
	for _, tc := range tests {
		if got := preTokenize(tc.in, tc.pre); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %q: %q, want %q", tc.pre, tc.in, got, tc.want)
		}
	}
}

func TestStreamDecoderJoinsToWhole(t *testing.T) {
	tk := spmVocab(t)
	// "é" split across two byte tokens, then a stray continuation byte and
	// a truncated sequence at the end.
	ids := tk.Encode("hé", false)
	ids = append(ids, tk.byteID[0x80], tk.byteID['a'], tk.byteID[0xE2], tk.byteID[0x82])
	d := tk.NewStreamDecoder()
	var parts []string
	for _, id := range ids {
		parts = append(parts, d.Add(id))
	}
	parts = append(parts, d.Flush())
	whole := tk.NewStreamDecoder()
	var all strings.Builder
	for _, id := range ids {
		all.WriteString(whole.Add(id))
	}
	all.WriteString(whole.Flush())
	if strings.Join(parts, "") != all.String() || all.String() != " hé\uFFFDa\uFFFD\uFFFD" {
		t.Fatalf("pieces %q joined %q, whole %q", parts, strings.Join(parts, ""), all.String())
	}
	if parts[2] != "" {
		t.Fatalf("half of é was emitted early: %q", parts)
	}
}

func TestChatTemplates(t *testing.T) {
	msgs := []Message{{"system", "Be brief."}, {"user", "Hi"}}
	tests := []struct {
		jinja string
		want  Template
		out   string
	}{
		{"", ChatML, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"{{ '<|start_header_id|>' }}", Llama3, "<s><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"{{ '[INST]' }}", Llama2, "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]"},
	}
	for _, tc := range tests {
		tpl := DetectTemplate(tc.jinja)
		if tpl != tc.want {
			t.Fatalf("DetectTemplate(%q) = %s, want %s", tc.jinja, tpl, tc.want)
		}
		if got := tpl.Render(msgs, "<s>", true); got != tc.out {
			t.Errorf("%s renders %q, want %q", tpl, got, tc.out)
		}
	}
}

func TestFromGGUFErrors(t *testing.T) {
	base := gguf.Metadata{
		{Key: "tokenizer.ggml.model", Value: gguf.Str("llama")},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Strings([]string{"a", "b"})},
	}
	tests := []struct {
		name string
		md   gguf.Metadata
		want string
	}{
		{"unknown model", gguf.Metadata{{Key: "tokenizer.ggml.model", Value: gguf.Str("wordpiece")}, base[1]}, "not supported"},
		{"scores length", append(append(gguf.Metadata{}, base...), gguf.KV{Key: "tokenizer.ggml.scores", Value: gguf.Float32s([]float32{1})}), "scores has 1"},
		{"bos outside vocabulary", append(append(gguf.Metadata{}, base...), gguf.KV{Key: "tokenizer.ggml.bos_token_id", Value: gguf.U32(9)}), "outside the vocabulary"},
		{"no tokens", gguf.Metadata{base[0]}, "tokenizer.ggml.tokens: missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromGGUF(tc.md)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
