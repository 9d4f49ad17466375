package reuse

import (
	"encoding/json"
	"testing"
)

func TestCountJSON(t *testing.T) {
	tests := []struct {
		name string
		in   Count
		want string
	}{
		{"known zero is a number", Known(0), "0"},
		{"unknown is null, never zero", Unknown(), "null"},
		{"known", Known(42), "42"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("marshal = %s, want %s", b, tc.want)
			}
			var back Count
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back != tc.in {
				t.Fatalf("round trip = %+v, want %+v", back, tc.in)
			}
		})
	}
}

func TestCountAddUnknownPropagates(t *testing.T) {
	if got := Known(3).Add(Unknown()); got.Known {
		t.Fatalf("known + unknown = %+v, want unknown", got)
	}
	if got := Known(3).Add(Known(4)); got != Known(7) {
		t.Fatalf("3 + 4 = %+v", got)
	}
}

func TestClassOwnership(t *testing.T) {
	want := map[Class]bool{NativeKV: true, CrossAgent: true, EnginePrefix: false, ProviderPrompt: false}
	for c, owned := range want {
		if c.FakOwned() != owned || !c.Valid() {
			t.Errorf("%s: FakOwned=%v Valid=%v", c, c.FakOwned(), c.Valid())
		}
	}
	if Class("blended").Valid() {
		t.Error("an unknown class must not be valid")
	}
}
