package native

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fakhq/fak/reuse"
)

// Metrics are the engine's Prometheus collectors, in a registry of their
// own so that several engines (tests, ride-vs-native runs) never collide.
type Metrics struct {
	Registry *prometheus.Registry

	requests         *prometheus.CounterVec
	promptTokens     prometheus.Counter
	computedTokens   prometheus.Counter
	completionTokens prometheus.Counter
	ttft             prometheus.Histogram
	prefillRate      prometheus.Histogram
	decodeRate       prometheus.Histogram
	evictedSpans     prometheus.Counter
}

func newMetrics(e *Engine) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.Registry.MustRegister(c) }
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fak_native_requests_total", Help: "Requests the native engine finished, by finish reason.",
	}, []string{"finish_reason"})
	m.promptTokens = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fak_native_prompt_tokens_total", Help: "Prompt tokens received (cached or computed).",
	})
	m.computedTokens = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fak_native_prefill_tokens_total", Help: "Prompt tokens computed by prefill (not served from native_kv).",
	})
	m.completionTokens = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fak_native_completion_tokens_total", Help: "Tokens generated.",
	})
	buckets := prometheus.ExponentialBuckets(0.001, 2, 16)
	m.ttft = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fak_native_ttft_seconds", Help: "Time from submission to first sampled token.", Buckets: buckets,
	})
	rates := prometheus.ExponentialBuckets(1, 2, 16)
	m.prefillRate = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fak_native_prefill_tokens_per_second", Help: "Per request: computed prompt tokens / (first token - admission).", Buckets: rates,
	})
	m.decodeRate = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fak_native_decode_tokens_per_second", Help: "Per request: (completion tokens - 1) / (finish - first token).", Buckets: rates,
	})
	m.evictedSpans = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fak_native_kv_span_evictions_total", Help: "Exact span evictions applied to sessions.",
	})
	for _, c := range []prometheus.Collector{m.requests, m.promptTokens, m.computedTokens, m.completionTokens, m.ttft, m.prefillRate, m.decodeRate, m.evictedSpans} {
		f(c)
	}
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fak_native_running_requests", Help: "Sequences in the running batch."},
		func() float64 { r, _ := e.Load(); return float64(r) }))
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fak_native_waiting_requests", Help: "Requests queued for admission."},
		func() float64 { _, w := e.Load(); return float64(w) }))
	if e.cache != nil {
		// The native_kv counters are read from the tree itself, so the
		// exposition can never disagree with what the cache did.
		labels := prometheus.Labels{"class": string(reuse.NativeKV)}
		counter := func(name, help string, get func() float64) {
			f(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, get))
		}
		gauge := func(name, help string, get func() float64) {
			f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, get))
		}
		c := e.cache
		counter("fak_native_kv_queries_total", "Prefix lookups in the native KV cache.", func() float64 { return float64(c.Stats().Queries) })
		counter("fak_native_kv_hits_total", "Prefix lookups that reused at least one token.", func() float64 { return float64(c.Stats().Hits) })
		counter("fak_native_kv_query_tokens_total", "Prompt tokens offered to the cache.", func() float64 { return float64(c.Stats().QueryTokens) })
		counter("fak_native_kv_hit_tokens_total", "Prompt tokens whose KV was reused.", func() float64 { return float64(c.Stats().HitTokens) })
		counter("fak_native_kv_evicted_tokens_total", "Tokens evicted by the LRU byte budget.", func() float64 { return float64(c.Stats().EvictedTokens) })
		gauge("fak_native_kv_bytes", "KV bytes held.", func() float64 { return float64(c.Stats().Bytes) })
		gauge("fak_native_kv_budget_bytes", "KV byte budget.", func() float64 { return float64(c.Budget()) })
	}
	return m
}

func (m *Metrics) observeFirstToken(s *seq) {
	m.ttft.Observe(s.res.FirstToken.Sub(s.res.Queued).Seconds())
	computed := s.res.PromptTokens - s.res.CachedTokens
	if d := s.res.FirstToken.Sub(s.res.Admitted).Seconds(); d > 0 {
		m.prefillRate.Observe(float64(computed) / d)
	}
}

func (m *Metrics) observeFinish(s *seq) {
	m.requests.WithLabelValues(s.res.FinishReason).Inc()
	m.promptTokens.Add(float64(s.res.PromptTokens))
	if !s.res.Admitted.IsZero() {
		m.computedTokens.Add(float64(s.res.PromptTokens - s.res.CachedTokens))
	}
	m.completionTokens.Add(float64(s.res.CompletionTokens))
	if s.res.CompletionTokens > 1 {
		if d := s.res.Finished.Sub(s.res.FirstToken).Seconds(); d > 0 {
			m.decodeRate.Observe(float64(s.res.CompletionTokens-1) / d)
		}
	}
}
