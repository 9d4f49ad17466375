package native

import (
	"fmt"

	"github.com/fakhq/fak/engines/native/kvcache"
	"github.com/fakhq/fak/engines/native/model"
)

// session is a named conversation whose context KV stays pinned in the
// cache between requests.
type session struct {
	tokens []int
	lease  *kvcache.Lease
	busy   bool
}

// SessionTokens returns the tokens of a session's cached context.
func (e *Engine) SessionTokens(id string) ([]int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.sessions[id]
	if s == nil {
		return nil, false
	}
	return append([]int(nil), s.tokens...), true
}

// SessionKV copies a session's cached KV out of the tree.
func (e *Engine) SessionKV(id string) (*model.KV, error) {
	e.mu.Lock()
	s := e.sessions[id]
	if s == nil || s.lease == nil {
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrNoSession, id)
	}
	n := len(s.tokens)
	l := e.cache.Match(s.tokens, n)
	e.mu.Unlock()
	defer l.Release()
	kv := e.Model.NewKV(n)
	kv.SetLen(l.Len())
	l.CopyTo(kv.K, kv.V)
	return kv, nil
}

// EndSession unpins a session's context; its KV stays in the cache as
// ordinary, evictable prefix entries.
func (e *Engine) EndSession(id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.sessions[id]
	if s == nil {
		return fmt.Errorf("%w: %s", ErrNoSession, id)
	}
	if s.busy {
		return fmt.Errorf("%w: %s", ErrSessionBusy, id)
	}
	s.lease.Release()
	delete(e.sessions, id)
	return nil
}

// Evict removes tokens [from, from+n) from a session's context. The tokens
// before the span keep their KV; every token after it is recomputed at its
// new position, so the session's cache afterwards is byte-identical to that
// of a run that never saw the span. The old tail is dropped from the cache
// unless something else uses it. It returns the number of tokens
// recomputed.
func (e *Engine) Evict(id string, from, n int) (int, error) {
	if e.cache == nil {
		return 0, fmt.Errorf("evict: the native_kv cache is disabled")
	}
	e.mu.Lock()
	s := e.sessions[id]
	switch {
	case s == nil || s.lease == nil:
		e.mu.Unlock()
		return 0, fmt.Errorf("%w: %s", ErrNoSession, id)
	case s.busy:
		e.mu.Unlock()
		return 0, fmt.Errorf("%w: %s", ErrSessionBusy, id)
	case from < 0 || n <= 0 || from+n > len(s.tokens):
		e.mu.Unlock()
		return 0, fmt.Errorf("evict: span [%d, %d) is outside the session's %d tokens", from, from+n, len(s.tokens))
	}
	s.busy = true // no request may use the session while it is rewritten
	old := s.tokens
	e.mu.Unlock()

	kept := append(append([]int(nil), old[:from]...), old[from+n:]...)
	kv := e.Model.NewKV(len(kept))
	prefix := e.cache.Match(kept, from)
	kv.SetLen(prefix.Len())
	prefix.CopyTo(kv.K, kv.V)
	recomputed := 0
	var err error
	for kv.Len < len(kept) && err == nil {
		var items []model.Item
		for pos := kv.Len; pos < len(kept) && len(items) < e.opts.PrefillChunk; pos++ {
			items = append(items, model.Item{KV: kv, Token: kept[pos], Pos: pos})
		}
		_, err = e.Model.Forward(e.pool, items)
		recomputed += len(items)
	}
	prefix.Release()
	e.mu.Lock()
	defer e.mu.Unlock()
	s.busy = false
	if err != nil {
		return 0, fmt.Errorf("evict: recompute: %w", err)
	}
	lease := e.cache.Insert(kept, kv.K, kv.V)
	s.lease.Release()
	s.lease, s.tokens = lease, kept
	e.cache.Forget(old)
	e.metrics.evictedSpans.Inc()
	return recomputed, nil
}
