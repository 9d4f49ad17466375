package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// StreamDecoder turns token ids into valid UTF-8 text as they arrive. A
// multi-byte character split across tokens is held until it is complete;
// every byte that cannot be part of valid UTF-8 becomes U+FFFD on its own.
// Because of that per-byte rule, the text it yields in pieces always joins
// to the text it yields at once, which is what makes a streamed completion
// equal the non-streamed one. Not safe for concurrent use.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
}

// NewStreamDecoder returns a decoder for t.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// Add appends token id and returns the text that is now complete.
func (d *StreamDecoder) Add(id int) string {
	d.pending = append(d.pending, d.t.Piece(id)...)
	return d.drain(false)
}

// Flush returns whatever is held, replacing an unfinished character.
func (d *StreamDecoder) Flush() string { return d.drain(true) }

func (d *StreamDecoder) drain(final bool) string {
	var sb strings.Builder
	b := d.pending
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			if !final && !utf8.FullRune(b) {
				break // could still become valid
			}
			sb.WriteRune(utf8.RuneError)
			b = b[1:]
			continue
		}
		sb.Write(b[:n])
		b = b[n:]
	}
	d.pending = append(d.pending[:0], b...)
	return sb.String()
}
