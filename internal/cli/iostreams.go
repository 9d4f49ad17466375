// Package cli holds what every fak command shares: IOStreams (where output
// goes and whether it is a terminal), the Factory commands are built from,
// the error types that decide exit codes, and terminal styles.
package cli

import (
	"bytes"
	"io"
	"os"
	"time"

	"github.com/charmbracelet/lipgloss"
	"golang.org/x/term"
)

// IOStreams are a command's input and outputs. stdout carries data; stderr
// carries progress, warnings and hints.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdoutTTY bool
	stderrTTY bool
	noColor   bool
	Quiet     bool
}

// System returns streams on the process's stdin, stdout and stderr.
// FAK_FORCE_TTY forces terminal mode; NO_COLOR turns colour off.
func System() *IOStreams {
	io := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	io.stdoutTTY = term.IsTerminal(int(os.Stdout.Fd()))
	io.stderrTTY = term.IsTerminal(int(os.Stderr.Fd()))
	if os.Getenv("FAK_FORCE_TTY") != "" {
		io.stdoutTTY, io.stderrTTY = true, true
	}
	_, io.noColor = os.LookupEnv("NO_COLOR")
	return io
}

// Test returns streams on buffers, for tests: not a terminal, no colour.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: errOut, noColor: true}, out, errOut
}

// IsStdoutTTY reports whether stdout is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether stderr is a terminal.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetTTY sets both terminal flags (tests).
func (s *IOStreams) SetTTY(on bool) { s.stdoutTTY, s.stderrTTY = on, on }

// SetColor turns colour on or off (the --no-color flag turns it off).
func (s *IOStreams) SetColor(on bool) { s.noColor = !on }

// ColorEnabled reports whether output may be coloured: only on a terminal,
// never with NO_COLOR or --no-color.
func (s *IOStreams) ColorEnabled() bool { return s.stdoutTTY && !s.noColor }

// Style returns the terminal styles for these streams.
func (s *IOStreams) Style() Style {
	if !s.ColorEnabled() {
		return Style{}
	}
	return Style{
		Bold:  lipgloss.NewStyle().Bold(true),
		Good:  lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
		Bad:   lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
		Muted: lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
		on:    true,
	}
}

// Style renders text for a terminal; the zero Style renders plain text.
type Style struct {
	Bold, Good, Bad, Muted lipgloss.Style
	on                     bool
}

func (st Style) render(s lipgloss.Style, text string) string {
	if !st.on {
		return text
	}
	return s.Render(text)
}

// B renders bold text.
func (st Style) B(text string) string { return st.render(st.Bold, text) }

// OK renders success.
func (st Style) OK(text string) string { return st.render(st.Good, text) }

// Fail renders failure.
func (st Style) Fail(text string) string { return st.render(st.Bad, text) }

// Dim renders secondary text.
func (st Style) Dim(text string) string { return st.render(st.Muted, text) }

// Factory holds what commands are built from.
type Factory struct {
	IOStreams *IOStreams
	Now       func() time.Time
	Version   VersionInfo
	JSON      *bool // the global --json flag
}

// VersionInfo describes the binary.
type VersionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}
