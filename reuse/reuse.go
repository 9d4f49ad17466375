// Package reuse is the attribution vocabulary every fak package speaks: who
// saved a token (Class) and how we know (Provenance). It imports nothing of
// fak's, so engines, harness, gateway and reports can all depend on it.
package reuse

import (
	"encoding/json"
	"fmt"
)

// Class names who owns a reuse. Every saving belongs to exactly one class.
type Class string

const (
	// NativeKV is the native engine reusing its own KV prefix (fak's saving).
	NativeKV Class = "native_kv"
	// EnginePrefix is a ridden engine's prefix cache (the engine's saving).
	EnginePrefix Class = "engine_prefix"
	// ProviderPrompt is a hosted provider's prompt cache (the provider's saving).
	ProviderPrompt Class = "provider_prompt"
	// CrossAgent is fak-governed reuse across agents (fak's saving).
	CrossAgent Class = "cross_agent"
)

// Classes lists every class in report order.
var Classes = []Class{NativeKV, EnginePrefix, ProviderPrompt, CrossAgent}

// FakOwned reports whether a saving of class c is fak's own. Engine and
// provider cache hits are theirs and never count toward a fak-owned figure.
func (c Class) FakOwned() bool { return c == NativeKV || c == CrossAgent }

// Valid reports whether c is one of the four classes.
func (c Class) Valid() bool {
	for _, k := range Classes {
		if c == k {
			return true
		}
	}
	return false
}

// Provenance says how a number is known.
type Provenance string

const (
	// Witnessed: fak did it and can show it (its own counters plus a cold control).
	Witnessed Provenance = "witnessed"
	// Observed: someone else reported it (usage fields, engine metrics).
	Observed Provenance = "observed"
	// Forecast: a model or a plan, never a result.
	Forecast Provenance = "forecast"
	// Missing: no data. Never silently zero.
	Missing Provenance = "missing"
)

// Count is a token count that may be unknown. The zero value is unknown, so a
// field nobody filled in can never pass for a measured zero.
type Count struct {
	N     int64
	Known bool
}

// Known returns a measured count.
func Known(n int64) Count { return Count{N: n, Known: true} }

// Unknown returns a count nobody reported.
func Unknown() Count { return Count{} }

// Add sums two counts; the sum is known only when both are.
func (c Count) Add(o Count) Count {
	return Count{N: c.N + o.N, Known: c.Known && o.Known}
}

// String prints the count, or "missing".
func (c Count) String() string {
	if !c.Known {
		return "missing"
	}
	return fmt.Sprintf("%d", c.N)
}

// MarshalJSON writes the count as a number, or null when unknown.
func (c Count) MarshalJSON() ([]byte, error) {
	if !c.Known {
		return []byte("null"), nil
	}
	return json.Marshal(c.N)
}

// UnmarshalJSON reads a number, or null as unknown.
func (c *Count) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = Count{}
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("count: %w", err)
	}
	*c = Known(n)
	return nil
}

// Usage is one response's token accounting, as its source reported it.
type Usage struct {
	TotalInput Count           `json:"total_input_tokens"`
	CachedRead Count           `json:"cached_read_tokens"`
	CacheWrite Count           `json:"cache_write_tokens"`
	Uncached   Count           `json:"uncached_input_tokens"`
	Output     Count           `json:"output_tokens"`
	Class      Class           `json:"class,omitempty"`
	Provenance Provenance      `json:"provenance,omitempty"`
	Raw        json.RawMessage `json:"raw,omitempty"`
}
