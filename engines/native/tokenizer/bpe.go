package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// byteToRune is GPT-2's reversible map from bytes to printable runes: the
// printable Latin-1 bytes map to themselves, the rest to U+0100 onwards.
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

func bytesToUnicode(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		sb.WriteRune(byteToRune[s[i]])
	}
	return sb.String()
}

func unicodeToBytes(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if b, ok := runeToByte[r]; ok {
			out = append(out, b)
		} else {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}

// bpe applies ranked merges to one pre-token.
func (t *Tokenizer) bpe(out []int, word string) []int {
	u := bytesToUnicode(word)
	if id, ok := t.index[u]; ok {
		return append(out, id)
	}
	var parts []string
	for _, r := range u {
		parts = append(parts, string(r))
	}
	for len(parts) > 1 {
		best, at := -1, -1
		for i := 0; i+1 < len(parts); i++ {
			if r, ok := t.ranks[parts[i]+" "+parts[i+1]]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		merged := parts[at] + parts[at+1]
		parts = append(parts[:at+1], parts[at+2:]...)
		parts[at] = merged
	}
	for _, p := range parts {
		if id, ok := t.index[p]; ok {
			out = append(out, id)
			continue
		}
		for _, r := range p { // a symbol outside the vocabulary: its characters
			if id, ok := t.index[string(r)]; ok {
				out = append(out, id)
			} else if t.UNK >= 0 {
				out = append(out, t.UNK)
			}
		}
	}
	return out
}

// preTokenize splits text the way the BPE model's regex does. "gpt2" (the
// default) follows GPT-2's pattern; "llama-bpe", "llama3", "qwen2" and
// similar follow the Llama 3 pattern (case-insensitive contractions, a
// non-letter may lead a word, digits in runs of at most three). Go's regexp
// has no look-ahead, so the scanner is written out.
func preTokenize(s, pre string) []string {
	llama3 := pre != "" && pre != "gpt2" && pre != "default"
	var out []string
	rs := []rune(s)
	isL := func(r rune) bool { return unicode.IsLetter(r) }
	isN := func(r rune) bool { return unicode.IsNumber(r) }
	isS := unicode.IsSpace
	for i := 0; i < len(rs); {
		start := i
		// Contractions.
		if rs[i] == '\'' && i+1 < len(rs) {
			rest := string(rs[i+1 : min(len(rs), i+3)])
			if llama3 {
				rest = strings.ToLower(rest)
			}
			matched := 0
			for _, c := range []string{"re", "ve", "ll", "s", "t", "m", "d"} {
				if strings.HasPrefix(rest, c) {
					matched = utf8.RuneCountInString(c)
					break
				}
			}
			if matched > 0 {
				i += 1 + matched
				out = append(out, string(rs[start:i]))
				continue
			}
		}
		if llama3 {
			// [^\r\n\p{L}\p{N}]?\p{L}+
			j := i
			if !isL(rs[j]) && !isN(rs[j]) && rs[j] != '\r' && rs[j] != '\n' && j+1 < len(rs) && isL(rs[j+1]) {
				j++
			}
			if isL(rs[j]) {
				for j < len(rs) && isL(rs[j]) {
					j++
				}
				out = append(out, string(rs[start:j]))
				i = j
				continue
			}
			// \p{N}{1,3}
			if isN(rs[i]) {
				j := i
				for j < len(rs) && isN(rs[j]) && j-i < 3 {
					j++
				}
				out = append(out, string(rs[start:j]))
				i = j
				continue
			}
		} else {
			// ' ?\p{L}+' and ' ?\p{N}+'
			j := i
			if rs[j] == ' ' && j+1 < len(rs) {
				j++
			}
			if isL(rs[j]) || isN(rs[j]) {
				f := isL
				if isN(rs[j]) {
					f = isN
				}
				for j < len(rs) && f(rs[j]) {
					j++
				}
				out = append(out, string(rs[start:j]))
				i = j
				continue
			}
		}
		// ' ?[^\s\p{L}\p{N}]+' (llama3 adds trailing newlines)
		j := i
		if rs[j] == ' ' && j+1 < len(rs) {
			j++
		}
		if !isS(rs[j]) && !isL(rs[j]) && !isN(rs[j]) {
			for j < len(rs) && !isS(rs[j]) && !isL(rs[j]) && !isN(rs[j]) {
				j++
			}
			if llama3 {
				for j < len(rs) && (rs[j] == '\r' || rs[j] == '\n') {
					j++
				}
			}
			out = append(out, string(rs[start:j]))
			i = j
			continue
		}
		// Whitespace: '\s*[\r\n]+' (llama3), '\s+(?!\S)', '\s+'.
		j = i
		for j < len(rs) && isS(rs[j]) {
			j++
		}
		if llama3 {
			last := -1
			for k := i; k < j; k++ {
				if rs[k] == '\r' || rs[k] == '\n' {
					last = k
				}
			}
			if last >= 0 {
				out = append(out, string(rs[start:last+1]))
				i = last + 1
				continue
			}
		}
		if j < len(rs) && j-i > 1 {
			j-- // leave one space to lead the next word
		}
		out = append(out, string(rs[start:j]))
		i = j
	}
	return out
}
