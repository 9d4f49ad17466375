package native

import (
	"strings"

	"github.com/fakhq/fak/engines/native/tokenizer"
)

// textStream turns sampled tokens into text and watches for stop
// sequences. Text that could still be the start of a stop sequence is held
// back, so a stop string never leaks into the output, streamed or not.
type textStream struct {
	dec     *tokenizer.StreamDecoder
	stops   []string
	pending string
}

func newTextStream(t *tokenizer.Tokenizer, stops []string) *textStream {
	var keep []string
	for _, s := range stops {
		if s != "" {
			keep = append(keep, s)
		}
	}
	return &textStream{dec: t.NewStreamDecoder(), stops: keep}
}

// add feeds one token; it returns the text now safe to emit and whether a
// stop sequence was reached (the text then ends before it).
func (ts *textStream) add(tok int) (string, bool) {
	ts.pending += ts.dec.Add(tok)
	return ts.release()
}

func (ts *textStream) release() (string, bool) {
	cut, hit := len(ts.pending), false
	for _, s := range ts.stops {
		if i := strings.Index(ts.pending, s); i >= 0 && i < cut {
			cut, hit = i, true
		}
	}
	if hit {
		out := ts.pending[:cut]
		ts.pending = ""
		return out, true
	}
	// Hold the longest suffix that is a proper prefix of some stop string.
	hold := 0
	for _, s := range ts.stops {
		for n := min(len(s)-1, len(ts.pending)); n > hold; n-- {
			if strings.HasSuffix(ts.pending, s[:n]) {
				hold = n
				break
			}
		}
	}
	out := ts.pending[:len(ts.pending)-hold]
	ts.pending = ts.pending[len(ts.pending)-hold:]
	return out, false
}

// flush returns whatever is held once generation has ended.
func (ts *textStream) flush() string {
	ts.pending += ts.dec.Flush()
	out, hit := ts.release()
	if !hit {
		out += ts.pending
	}
	ts.pending = ""
	return out
}
