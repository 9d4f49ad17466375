package cli

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, 0},
		{"gate failed", &CheckError{errors.New("gate")}, 1},
		{"bad flag", FlagErrorf("--x"), 2},
		{"wrapped bad input", fmt.Errorf("load: %w", &InputError{errors.New("bad gguf")}), 2},
		{"interrupted", fmt.Errorf("run: %w", context.Canceled), 130},
		{"anything else", errors.New("connection refused"), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExitCode(tc.err); got != tc.want {
				t.Fatalf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestColorOnlyOnTTYWithoutNoColor(t *testing.T) {
	io, _, _ := Test()
	if io.ColorEnabled() {
		t.Fatal("colour on a non-terminal")
	}
	io.SetTTY(true)
	io.SetColor(true)
	if !io.ColorEnabled() {
		t.Fatal("no colour on a terminal")
	}
	io.SetColor(false)
	if io.ColorEnabled() || io.Style().B("x") != "x" {
		t.Fatal("--no-color did not turn colour off")
	}
}
