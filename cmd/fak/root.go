package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fakhq/fak/internal/cli"
)

// NewCmdRoot builds the fak command tree.
func NewCmdRoot(f *cli.Factory) *cobra.Command {
	var jsonOut, quiet, noColor bool
	f.JSON = &jsonOut
	cmd := &cobra.Command{
		Use:   "fak <command>",
		Short: "Measure LLM serving honestly",
		Long: strings.TrimSpace(`
fak serves, drives and measures LLM engines, and says with evidence how fast
they were and which cache saved what. It carries its own native engine, so
that a ridden engine and the native one can be compared on one workload.

Start with the native engine on a generated model (no download, no GPU):

  $ fak serve --engine native
`),
		Example: example(`
  $ fak serve --engine native --addr 127.0.0.1:8080
  $ fak fixtures model --preset tiny --quant q8_0 --seed 1 --out tiny.gguf
  $ fak version --json
`),
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRun: func(cmd *cobra.Command, args []string) {
			if noColor {
				f.IOStreams.SetColor(false)
			}
			f.IOStreams.Quiet = quiet
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &cli.FlagError{Err: err} })
	cmd.PersistentFlags().BoolVar(&jsonOut, "json", false, "Print machine-readable JSON on stdout")
	cmd.PersistentFlags().BoolVarP(&quiet, "quiet", "q", false, "Print only results: no progress or hints on stderr")
	cmd.PersistentFlags().BoolVar(&noColor, "no-color", false, "Never colour output (colour is used only on a terminal, and never with NO_COLOR set)")
	cmd.SetOut(f.IOStreams.Out)
	cmd.SetErr(f.IOStreams.ErrOut)
	cmd.AddCommand(NewCmdVersion(f), NewCmdServe(f, nil), NewCmdFixtures(f))
	return cmd
}

// printJSON writes v as indented JSON on stdout.
func printJSON(io *cli.IOStreams, v any) error {
	enc := json.NewEncoder(io.Out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// hintf writes a hint on stderr unless --quiet.
func hintf(io *cli.IOStreams, format string, args ...any) {
	if !io.Quiet {
		fmt.Fprintf(io.ErrOut, format, args...)
	}
}

// example trims the blank lines around a heredoc-style Example, keeping
// the indentation of its first line.
func example(s string) string { return strings.Trim(s, "\n") }
