// Package native is fak's own inference engine: a llama-family model from a
// GGUF file, a continuous-batching scheduler, the native_kv radix cache with
// bit-exact prefix reuse and exact span eviction, and an OpenAI-compatible
// HTTP handler.
package native

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fakhq/fak/engines/native/kvcache"
	"github.com/fakhq/fak/engines/native/model"
	"github.com/fakhq/fak/engines/native/tensor"
)

// Defaults for Options.
const (
	DefaultMaxBatch     = 16
	DefaultPrefillChunk = 256
	DefaultCacheBytes   = 1 << 30
)

// Options tune the engine.
type Options struct {
	MaxBatch     int   // sequences decoded together in one step
	PrefillChunk int   // prompt tokens computed per step, across requests
	CacheBytes   int64 // native_kv budget; 0 means DefaultCacheBytes, <0 disables the cache
	Workers      int   // matrix workers; 0 means GOMAXPROCS
	Now          func() time.Time
}

// Engine serves generation requests on one model. Requests submitted
// concurrently share decode steps (iteration-level scheduling): each step
// feeds every running sequence one token and the waiting ones a chunk of
// their prompt, up to MaxBatch sequences. Safe for concurrent use.
type Engine struct {
	Model   *model.Model
	opts    Options
	pool    *tensor.Pool
	cache   *kvcache.Tree // nil when disabled
	queue   chan *seq
	quit    chan struct{}
	done    chan struct{}
	metrics *Metrics

	mu       sync.Mutex
	sessions map[string]*session
	running  int
	waiting  int
}

// Errors a request can fail with.
var (
	ErrContextLength = errors.New("prompt does not fit the context")
	ErrEmptyPrompt   = errors.New("prompt is empty")
	ErrClosed        = errors.New("engine is closed")
	ErrSessionBusy   = errors.New("session has a request in flight")
	ErrNoSession     = errors.New("no such session")
)

// New starts an engine on m.
func New(m *model.Model, opts Options) *Engine {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.PrefillChunk <= 0 {
		opts.PrefillChunk = DefaultPrefillChunk
	}
	if opts.CacheBytes == 0 {
		opts.CacheBytes = DefaultCacheBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	e := &Engine{
		Model: m, opts: opts, pool: tensor.NewPool(opts.Workers),
		queue: make(chan *seq, 1024), quit: make(chan struct{}), done: make(chan struct{}),
		sessions: map[string]*session{},
	}
	if opts.CacheBytes > 0 {
		e.cache = kvcache.New(m.Blocks, m.KVDim(), opts.CacheBytes)
	}
	e.metrics = newMetrics(e)
	go e.loop()
	return e
}

// Close stops the scheduler; requests still running end with ErrClosed.
func (e *Engine) Close() {
	select {
	case <-e.quit:
	default:
		close(e.quit)
	}
	<-e.done
	e.pool.Close()
}

// Cache returns the native_kv tree, or nil when the cache is disabled.
func (e *Engine) Cache() *kvcache.Tree { return e.cache }

// Metrics returns the engine's Prometheus collectors.
func (e *Engine) Metrics() *Metrics { return e.metrics }

// Request is one generation.
type Request struct {
	Tokens     []int
	MaxTokens  int // 0 means until the context is full
	Sampling   Sampling
	Session    string // keep this conversation's KV pinned under this id
	NoCache    bool   // neither reuse nor store KV (a cold control)
	KeepLogits bool   // return the logits behind every sampled token
}

// Result is what a finished request reports.
type Result struct {
	PromptTokens     int
	CachedTokens     int // prompt tokens whose KV came from the native_kv cache
	CompletionTokens int
	FinishReason     string // "stop", "length" or "cancelled"
	Logits           [][]float32
	Queued           time.Time
	Admitted         time.Time
	FirstToken       time.Time
	Finished         time.Time
	Err              error
}

// TTFT is the time from submission to the first sampled token.
func (r Result) TTFT() time.Duration { return r.FirstToken.Sub(r.Queued) }

// Run is a request in flight: Tokens yields each sampled token and is
// closed when the request ends; Result then tells how it ended.
type Run struct {
	Tokens <-chan int
	s      *seq
}

// Result waits for the run to end and returns its result.
func (r *Run) Result() Result {
	<-r.s.finished
	return r.s.res
}

// Generate submits a request. Cancelling ctx ends it early (finish reason
// "cancelled"); what it computed so far is still cached.
func (e *Engine) Generate(ctx context.Context, req Request) (*Run, error) {
	if len(req.Tokens) == 0 {
		return nil, ErrEmptyPrompt
	}
	if len(req.Tokens) >= e.Model.Context {
		return nil, fmt.Errorf("%w: %d prompt tokens, context is %d", ErrContextLength, len(req.Tokens), e.Model.Context)
	}
	for i, t := range req.Tokens {
		if t < 0 || t >= e.Model.Vocab {
			return nil, fmt.Errorf("token %d at index %d is outside the vocabulary of %d", t, i, e.Model.Vocab)
		}
	}
	budget := e.Model.Context - len(req.Tokens)
	if req.MaxTokens <= 0 || req.MaxTokens > budget {
		req.MaxTokens = budget
	}
	if req.Session != "" {
		e.mu.Lock()
		if s := e.sessions[req.Session]; s != nil && s.busy {
			e.mu.Unlock()
			return nil, fmt.Errorf("%w: %s", ErrSessionBusy, req.Session)
		}
		if e.sessions[req.Session] == nil {
			e.sessions[req.Session] = &session{}
		}
		e.sessions[req.Session].busy = true
		e.mu.Unlock()
	}
	out := make(chan int, req.MaxTokens+1)
	s := &seq{req: req, ctx: ctx, out: out, finished: make(chan struct{}), tokens: append([]int(nil), req.Tokens...)}
	s.res.Queued = e.opts.Now()
	s.res.PromptTokens = len(req.Tokens)
	s.rng = newRNG(req.Sampling.Seed)
	e.mu.Lock()
	e.waiting++
	e.mu.Unlock()
	select {
	case e.queue <- s:
	case <-e.quit:
		return nil, ErrClosed
	}
	return &Run{Tokens: out, s: s}, nil
}

// seq is one request's state inside the scheduler.
type seq struct {
	req      Request
	ctx      context.Context
	out      chan int
	finished chan struct{}
	tokens   []int // prompt, then every sampled token
	kv       *model.KV
	lease    *kvcache.Lease // the matched prefix, pinned while running
	rng      *rng
	res      Result
}

func (s *seq) prefilling() bool { return s.kv.Len < len(s.req.Tokens) }

// loop is the scheduler: admit, step, repeat.
func (e *Engine) loop() {
	defer close(e.done)
	var active []*seq
	for {
		if len(active) == 0 {
			select {
			case s := <-e.queue:
				active = append(active, e.admit(s))
			case <-e.quit:
				return
			}
		}
	admit:
		for len(active) < e.opts.MaxBatch {
			select {
			case s := <-e.queue:
				active = append(active, e.admit(s))
			default:
				break admit
			}
		}
		select {
		case <-e.quit:
			for _, s := range active {
				e.finish(s, "cancelled", ErrClosed)
			}
			for {
				select {
				case s := <-e.queue:
					e.finish(e.admit(s), "cancelled", ErrClosed)
				default:
					return
				}
			}
		default:
		}
		active = e.step(active)
	}
}

// admit matches the longest cached prefix and restores its KV.
func (e *Engine) admit(s *seq) *seq {
	e.mu.Lock()
	e.waiting--
	e.running++
	e.mu.Unlock()
	s.res.Admitted = e.opts.Now()
	s.kv = e.Model.NewKV(len(s.tokens) + min(s.req.MaxTokens, 256))
	if e.cache != nil && !s.req.NoCache {
		// The last prompt token is always computed: its logits are needed.
		s.lease = e.cache.Match(s.req.Tokens, len(s.req.Tokens)-1)
		s.kv.SetLen(s.lease.Len())
		s.lease.CopyTo(s.kv.K, s.kv.V)
		s.res.CachedTokens = s.lease.Len()
	}
	return s
}

// step runs one forward pass over the active sequences and returns those
// still running.
func (e *Engine) step(active []*seq) []*seq {
	var items []model.Item
	var owners []*seq
	budget := e.opts.PrefillChunk
	live := active[:0]
	for _, s := range active {
		if err := s.ctx.Err(); err != nil {
			e.finish(s, "cancelled", nil)
			continue
		}
		live = append(live, s)
	}
	active = live
	for _, s := range active {
		if s.prefilling() {
			if budget == 0 {
				continue
			}
			n := min(budget, len(s.req.Tokens)-s.kv.Len)
			budget -= n
			for i := 0; i < n; i++ {
				pos := s.kv.Len + i
				items = append(items, model.Item{KV: s.kv, Token: s.tokens[pos], Pos: pos, Logits: pos == len(s.req.Tokens)-1})
				owners = append(owners, s)
			}
			continue
		}
		pos := len(s.tokens) - 1
		items = append(items, model.Item{KV: s.kv, Token: s.tokens[pos], Pos: pos, Logits: true})
		owners = append(owners, s)
	}
	if len(items) == 0 {
		return active
	}
	logits, err := e.Model.Forward(e.pool, items)
	if err != nil {
		for _, s := range active {
			e.finish(s, "cancelled", err)
		}
		return nil
	}
	now := e.opts.Now()
	ended := map[*seq]bool{}
	for i, it := range items {
		if logits[i] == nil {
			continue
		}
		s := owners[i]
		tok := sample(logits[i], s.req.Sampling, s.rng)
		if s.req.KeepLogits {
			s.res.Logits = append(s.res.Logits, logits[i])
		}
		if s.res.FirstToken.IsZero() {
			s.res.FirstToken = now
			e.metrics.observeFirstToken(s)
		}
		if e.Model.Tok.IsEndOfGeneration(tok) {
			e.finish(s, "stop", nil)
			ended[s] = true
			continue
		}
		s.tokens = append(s.tokens, tok)
		s.res.CompletionTokens++
		s.out <- tok
		if s.res.CompletionTokens >= s.req.MaxTokens || it.Pos+1 >= e.Model.Context-1 {
			e.finish(s, "length", nil)
			ended[s] = true
		}
	}
	live = active[:0]
	for _, s := range active {
		if !ended[s] {
			live = append(live, s)
		}
	}
	return live
}

// finish ends a sequence: its computed KV goes into the cache (or its
// session), its channel closes and its result is published.
func (e *Engine) finish(s *seq, reason string, err error) {
	s.res.FinishReason = reason
	s.res.Err = err
	s.res.Finished = e.opts.Now()
	var keep *kvcache.Lease
	if s.kv != nil && e.cache != nil && !s.req.NoCache && s.kv.Len > 0 {
		keep = e.cache.Insert(s.tokens[:s.kv.Len], s.kv.K, s.kv.V)
	}
	s.lease.Release()
	if s.req.Session != "" {
		e.mu.Lock()
		ss := e.sessions[s.req.Session]
		ss.busy = false
		if keep != nil {
			ss.lease.Release()
			ss.lease, keep = keep, nil
			ss.tokens = append([]int(nil), s.tokens[:s.kv.Len]...)
		}
		e.mu.Unlock()
	}
	keep.Release()
	if s.kv != nil {
		e.mu.Lock()
		e.running--
		e.mu.Unlock()
	}
	e.metrics.observeFinish(s)
	s.kv = nil
	close(s.out)
	close(s.finished)
}

// Load reports the scheduler's occupancy.
func (e *Engine) Load() (running, waiting int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running, e.waiting
}
