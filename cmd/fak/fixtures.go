package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fakhq/fak/engines/native/gguf"
	"github.com/fakhq/fak/fixtures"
	"github.com/fakhq/fak/internal/cli"
)

// NewCmdFixtures builds `fak fixtures`.
func NewCmdFixtures(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fixtures <command>",
		Short: "Generate test inputs: small GGUF models with seeded weights",
	}
	cmd.AddCommand(NewCmdFixturesModel(f, nil))
	return cmd
}

// ModelOptions are the flags of `fak fixtures model`.
type ModelOptions struct {
	IO     *cli.IOStreams
	JSON   bool
	Preset string
	Quant  string
	Seed   uint64
	Out    string
}

// NewCmdFixturesModel builds `fak fixtures model`.
func NewCmdFixturesModel(f *cli.Factory, runF func(*ModelOptions) error) *cobra.Command {
	opts := &ModelOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "model --out FILE.gguf",
		Short: "Write a llama-architecture GGUF model with seeded random weights",
		Long: strings.TrimSpace(`
Write a llama-architecture GGUF v3 model with seeded random weights and a
byte-level vocabulary (<0x00>..<0xFF>, <s>, </s>, <unk>, ▁). The file has the
strict metadata types llama.cpp checks, so llama.cpp and fak load it alike.
The same preset, quantisation and seed always give byte-identical files.

Presets:
  tiny    ` + fixtures.Presets["tiny"].About + `
  small   ` + fixtures.Presets["small"].About + `
`),
		Example: example(`
  $ fak fixtures model --preset tiny --out tiny.gguf
  $ fak fixtures model --preset small --quant q8_0 --seed 1 --out small-q8_0.gguf
`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.JSON = *f.JSON
			if _, ok := fixtures.Presets[opts.Preset]; !ok {
				return cli.FlagErrorf("--preset must be one of %s, got %q", strings.Join(fixtures.PresetNames(), ", "), opts.Preset)
			}
			if _, err := gguf.ParseTensorType(opts.Quant); err != nil || !validQuant(opts.Quant) {
				return cli.FlagErrorf("--quant must be one of %s, got %q", strings.Join(fixtures.Quantizations, ", "), opts.Quant)
			}
			if opts.Out == "" {
				return cli.FlagErrorf("--out is required")
			}
			if runF != nil {
				return runF(opts)
			}
			return modelRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Preset, "preset", "tiny", "Model shape: "+strings.Join(fixtures.PresetNames(), ", "))
	cmd.Flags().StringVar(&opts.Quant, "quant", "f32", "Weight type: "+strings.Join(fixtures.Quantizations, ", "))
	cmd.Flags().Uint64Var(&opts.Seed, "seed", fixtures.DefaultSeed, "Seed of the random weights")
	cmd.Flags().StringVarP(&opts.Out, "out", "o", "", "Output file (- for stdout)")
	return cmd
}

func validQuant(q string) bool {
	for _, v := range fixtures.Quantizations {
		if strings.EqualFold(v, q) {
			return true
		}
	}
	return false
}

func modelRun(opts *ModelOptions) error {
	quant, _ := gguf.ParseTensorType(opts.Quant)
	p := fixtures.Presets[opts.Preset]
	var w io.Writer = opts.IO.Out
	var file *os.File
	if opts.Out != "-" {
		var err error
		if file, err = os.Create(opts.Out); err != nil {
			return fmt.Errorf("create %s: %w", opts.Out, err)
		}
		w = file
	}
	h := sha256.New()
	size, err := fixtures.WriteModel(io.MultiWriter(w, h), p, quant, opts.Seed)
	if err != nil {
		if file != nil {
			file.Close()
			os.Remove(opts.Out)
		}
		return err
	}
	if file != nil {
		if err := file.Close(); err != nil {
			return fmt.Errorf("write %s: %w", opts.Out, err)
		}
	}
	info := map[string]any{
		"path": opts.Out, "preset": p.Name, "quant": strings.ToLower(quant.String()), "seed": opts.Seed,
		"parameters": p.Params(), "size_bytes": size, "sha256": hex.EncodeToString(h.Sum(nil)),
	}
	if opts.Out == "-" {
		return nil
	}
	if opts.JSON {
		return printJSON(opts.IO, info)
	}
	fmt.Fprintf(opts.IO.Out, "%s\t%s\t%s\tseed=%d\tparams=%d\tbytes=%d\tsha256=%s\n",
		opts.Out, p.Name, info["quant"], opts.Seed, p.Params(), size, info["sha256"])
	return nil
}
