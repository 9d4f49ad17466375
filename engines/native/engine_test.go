package native

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/fakhq/fak/engines/native/gguf"
	"github.com/fakhq/fak/engines/native/model"
	"github.com/fakhq/fak/engines/native/tensor"
	"github.com/fakhq/fak/fixtures"
)

func tinyModel(t testing.TB, quant gguf.TensorType) *model.Model {
	t.Helper()
	var buf bytes.Buffer
	if _, err := fixtures.WriteModel(&buf, fixtures.Presets["tiny"], quant, 11); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newEngine(t testing.TB, m *model.Model, opts Options) *Engine {
	t.Helper()
	e := New(m, opts)
	t.Cleanup(e.Close)
	return e
}

func generate(t testing.TB, e *Engine, req Request) ([]int, Result) {
	t.Helper()
	run, err := e.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var toks []int
	for tok := range run.Tokens {
		toks = append(toks, tok)
	}
	res := run.Result()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return toks, res
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestCacheHitIsBitExact(t *testing.T) {
	for _, quant := range []gguf.TensorType{gguf.TensorF32, gguf.TensorQ8_0} {
		m := tinyModel(t, quant)
		prompts := []string{
			"You are a helpful agent. The user asks about the weather in Lisbon today.",
			"def fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\n# tests follow",
			"Tool result: {\"status\": \"ok\", \"rows\": 42}. Summarise it for the user.",
		}
		for _, p := range prompts {
			toks := m.Tok.Encode(p, true)
			for _, split := range []int{1, 7, len(toks) / 2, len(toks) - 2} {
				t.Run(fmt.Sprintf("%s/len%d/split%d", quant, len(toks), split), func(t *testing.T) {
					cold := newEngine(t, m, Options{CacheBytes: -1})
					coldToks, coldRes := generate(t, cold, Request{Tokens: toks, MaxTokens: 6, KeepLogits: true})

					warm := newEngine(t, m, Options{})
					// Warm the cache with a request that shares exactly the
					// first split tokens and then diverges.
					seed := append(append([]int(nil), toks[:split]...), fixtures.FirstByte+'#', fixtures.FirstByte+'!')
					generate(t, warm, Request{Tokens: seed, MaxTokens: 1})
					warmToks, warmRes := generate(t, warm, Request{Tokens: toks, MaxTokens: 6, KeepLogits: true})

					if warmRes.CachedTokens != split {
						t.Fatalf("cached tokens = %d, want %d", warmRes.CachedTokens, split)
					}
					if coldRes.CachedTokens != 0 {
						t.Fatalf("cold control reused %d tokens", coldRes.CachedTokens)
					}
					if fmt.Sprint(warmToks) != fmt.Sprint(coldToks) {
						t.Fatalf("tokens differ: warm %v cold %v", warmToks, coldToks)
					}
					if len(warmRes.Logits) != len(coldRes.Logits) || len(warmRes.Logits) == 0 {
						t.Fatalf("logit rows: warm %d cold %d", len(warmRes.Logits), len(coldRes.Logits))
					}
					for i := range coldRes.Logits {
						if !sameBits(warmRes.Logits[i], coldRes.Logits[i]) {
							t.Fatalf("logits of sampled token %d differ between cache hit and cold run", i)
						}
					}
				})
			}
		}
	}
}

func TestConcurrentRequestsShareStepsAndStayExact(t *testing.T) {
	m := tinyModel(t, gguf.TensorQ8_0)
	prompts := make([][]int, 6)
	for i := range prompts {
		prompts[i] = m.Tok.Encode(fmt.Sprintf("request %d asks for something a little different %s", i, string(rune('a'+i))), true)
	}
	alone := make([][]int, len(prompts))
	solo := newEngine(t, m, Options{CacheBytes: -1, MaxBatch: 1})
	for i, p := range prompts {
		alone[i], _ = generate(t, solo, Request{Tokens: p, MaxTokens: 12})
	}

	e := newEngine(t, m, Options{CacheBytes: -1, MaxBatch: 8})
	var wg sync.WaitGroup
	got := make([][]int, len(prompts))
	runs := make([]*Run, len(prompts))
	for i, p := range prompts {
		run, err := e.Generate(context.Background(), Request{Tokens: p, MaxTokens: 12})
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = run
	}
	maxRunning := 0
	var mu sync.Mutex
	for i, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tok := range run.Tokens {
				r, _ := e.Load()
				mu.Lock()
				maxRunning = max(maxRunning, r)
				mu.Unlock()
				got[i] = append(got[i], tok)
			}
		}()
	}
	wg.Wait()
	for i := range prompts {
		if fmt.Sprint(got[i]) != fmt.Sprint(alone[i]) {
			t.Errorf("request %d: batched %v, alone %v", i, got[i], alone[i])
		}
	}
	if maxRunning < 2 {
		t.Errorf("at most %d sequence ran at once; continuous batching should run several", maxRunning)
	}
}

func TestEvictSpanIsByteIdenticalToColdRun(t *testing.T) {
	m := tinyModel(t, gguf.TensorF32)
	e := newEngine(t, m, Options{})
	prompt := m.Tok.Encode("system: be brief.\nuser: read file a.txt\ntool: <40 lines of a.txt that the agent no longer needs>\nuser: now summarise", true)
	generate(t, e, Request{Tokens: prompt, MaxTokens: 5, Session: "s1"})
	before, ok := e.SessionTokens("s1")
	if !ok || len(before) != len(prompt)+4 {
		t.Fatalf("session has %d tokens, want prompt+4 fed = %d", len(before), len(prompt)+4)
	}
	from, n := 40, 30
	recomputed, err := e.Evict("s1", from, n)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := e.SessionTokens("s1")
	want := append(append([]int(nil), before[:from]...), before[from+n:]...)
	if fmt.Sprint(after) != fmt.Sprint(want) {
		t.Fatalf("session tokens after evict are not the sequence without the span")
	}
	if recomputed != len(before)-from-n {
		t.Fatalf("recomputed %d tokens, want %d (everything after the span)", recomputed, len(before)-from-n)
	}
	got, err := e.SessionKV("s1")
	if err != nil {
		t.Fatal(err)
	}
	cold := m.NewKV(len(want))
	items := make([]model.Item, len(want))
	for i, tok := range want {
		items[i] = model.Item{KV: cold, Token: tok, Pos: i}
	}
	pool := tensor.NewPool(1)
	defer pool.Close()
	if _, err := m.Forward(pool, items); err != nil {
		t.Fatal(err)
	}
	if got.Len != cold.Len {
		t.Fatalf("session KV holds %d positions, cold run %d", got.Len, cold.Len)
	}
	for l := range cold.K {
		if !sameBits(got.K[l], cold.K[l]) || !sameBits(got.V[l], cold.V[l]) {
			t.Fatalf("layer %d: KV after eviction differs from a run that never saw the span", l)
		}
	}
	// The next turn of the session reuses the whole edited context.
	next := append(append([]int(nil), want...), m.Tok.Encode(" and go on", false)...)
	_, res := generate(t, e, Request{Tokens: next, MaxTokens: 2, Session: "s1"})
	if res.CachedTokens != len(want) {
		t.Fatalf("next turn reused %d tokens, want %d", res.CachedTokens, len(want))
	}

	bad := []struct {
		name    string
		id      string
		from, n int
	}{
		{"unknown session", "nope", 0, 1},
		{"span past the end", "s1", 10, 10000},
		{"empty span", "s1", 3, 0},
		{"negative start", "s1", -1, 2},
	}
	for _, tc := range bad {
		if _, err := e.Evict(tc.id, tc.from, tc.n); err == nil {
			t.Errorf("%s: want an error", tc.name)
		}
	}
}

func TestSamplingIsSeeded(t *testing.T) {
	m := tinyModel(t, gguf.TensorF32)
	e := newEngine(t, m, Options{CacheBytes: -1})
	p := m.Tok.Encode("sample me", true)
	s := Sampling{Temperature: 0.9, TopK: 40, TopP: 0.95, Seed: 1234}
	a, _ := generate(t, e, Request{Tokens: p, MaxTokens: 16, Sampling: s})
	b, _ := generate(t, e, Request{Tokens: p, MaxTokens: 16, Sampling: s})
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("same seed, different tokens: %v vs %v", a, b)
	}
	s.Seed = 99
	c, _ := generate(t, e, Request{Tokens: p, MaxTokens: 16, Sampling: s})
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatalf("different seeds gave the same 16 tokens %v", a)
	}
}

func TestGenerateRejectsBadRequests(t *testing.T) {
	m := tinyModel(t, gguf.TensorF32)
	e := newEngine(t, m, Options{})
	long := make([]int, m.Context)
	for i := range long {
		long[i] = fixtures.FirstByte + 'a'
	}
	for name, req := range map[string]Request{
		"empty":        {},
		"too long":     {Tokens: long},
		"bad token id": {Tokens: []int{1, m.Vocab + 5}},
	} {
		if _, err := e.Generate(context.Background(), req); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}
