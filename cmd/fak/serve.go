package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fakhq/fak/engines/native"
	"github.com/fakhq/fak/engines/native/gguf"
	"github.com/fakhq/fak/engines/native/model"
	"github.com/fakhq/fak/fixtures"
	"github.com/fakhq/fak/internal/cli"
)

// ServeOptions are the flags of `fak serve`.
type ServeOptions struct {
	IO           *cli.IOStreams
	Engine       string
	Model        string
	Addr         string
	ModelID      string
	MaxBatch     int
	PrefillChunk int
	CacheBytes   int64
	Ready        func(addr string) // called once listening (tests)
}

// NewCmdServe builds `fak serve`.
func NewCmdServe(f *cli.Factory, runF func(*ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "serve --engine native [--model FILE.gguf]",
		Short: "Serve an OpenAI-compatible API from the native engine",
		Long: strings.TrimSpace(`
Serve an OpenAI-compatible API (GET /v1/models, POST /v1/chat/completions,
POST /v1/completions, streaming SSE) from fak's native engine, with
Prometheus metrics on /metrics and a health check on /healthz.

With no --model, fak generates its default model once (the "small" preset,
q8_0, seed 1: about 100 M parameters, ~105 MB) into its cache directory
($FAK_CACHE_DIR, else the user cache directory) and serves that: nothing to
download, no GPU needed. Any llama-family GGUF (Llama, Mistral, Qwen2,
TinyLlama) with F32, F16, BF16, Q8_0 or Q4_0 weights can be given instead.

Prompt prefixes are reused from the native KV cache; reused tokens are
reported in usage.prompt_tokens_details.cached_tokens. Send the header
X-Fak-Session: ID to keep one conversation's context pinned, and
POST /fak/v1/sessions/ID/evict {"from": F, "count": N} to remove a span of
it exactly.
`),
		Example: example(`
  $ fak serve --engine native
  $ fak serve --engine native --model ./tinyllama-1.1b-q8_0.gguf --addr 127.0.0.1:9000
  $ curl -s localhost:8080/v1/chat/completions -d '{"model":"fak-small","messages":[{"role":"user","content":"hi"}],"max_tokens":16}'
`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Engine != "native" {
				return cli.FlagErrorf("--engine %q is not available yet: this build serves only --engine native (ridden engines come with the gateway)", opts.Engine)
			}
			if _, _, err := net.SplitHostPort(opts.Addr); err != nil {
				return cli.FlagErrorf("--addr must be host:port, got %q", opts.Addr)
			}
			if opts.MaxBatch < 1 {
				return cli.FlagErrorf("--max-batch must be at least 1, got %d", opts.MaxBatch)
			}
			if runF != nil {
				return runF(opts)
			}
			return serveRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Engine, "engine", "native", "Engine to serve (native)")
	cmd.Flags().StringVarP(&opts.Model, "model", "m", "", "GGUF model file (default: the generated small q8_0 model)")
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:8080", "Listen address")
	cmd.Flags().StringVar(&opts.ModelID, "model-id", "", "Model id clients send (default: the file's general.name, else its base name)")
	cmd.Flags().IntVar(&opts.MaxBatch, "max-batch", native.DefaultMaxBatch, "Most sequences decoded together in one step")
	cmd.Flags().IntVar(&opts.PrefillChunk, "prefill-chunk", native.DefaultPrefillChunk, "Most prompt tokens computed in one step")
	cmd.Flags().Int64Var(&opts.CacheBytes, "cache-bytes", native.DefaultCacheBytes, "Native KV cache budget in bytes (negative disables the cache)")
	return cmd
}

func serveRun(ctx context.Context, opts *ServeOptions) error {
	path := opts.Model
	if path == "" {
		dir, err := fixtures.CacheDir()
		if err != nil {
			return err
		}
		p := fixtures.Presets["small"]
		target := filepath.Join(dir, fixtures.FileName(p, gguf.TensorQ8_0, fixtures.DefaultSeed))
		hintf(opts.IO, "fak: using the default model %s\n", target)
		start := time.Now()
		var created bool
		path, created, err = fixtures.EnsureModel(dir, p, gguf.TensorQ8_0, fixtures.DefaultSeed)
		if err != nil {
			return err
		}
		if created {
			hintf(opts.IO, "fak: generated it in %.1fs (once; later runs reuse it)\n", time.Since(start).Seconds())
		}
	}
	m, err := model.Open(path)
	if err != nil {
		return &cli.InputError{Err: err}
	}
	defer m.Close()
	id := opts.ModelID
	if id == "" {
		id = m.Name
	}
	if id == "" {
		id = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	e := native.New(m, native.Options{MaxBatch: opts.MaxBatch, PrefillChunk: opts.PrefillChunk, CacheBytes: opts.CacheBytes})
	defer e.Close()
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	srv := &http.Server{Handler: native.NewServer(e, id).Handler(), ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String()
	st := opts.IO.Style()
	hintf(opts.IO, "%s %s (%s, %d blocks, %d wide, %.1f M parameters, %s weights, context %d)\n",
		st.B("fak serve: native engine serving"), id, m.Arch, m.Blocks, m.Dim, float64(m.Params)/1e6, weightType(m), m.Context)
	hintf(opts.IO, "  OpenAI API  %s/v1\n  metrics     %s/metrics\n  try:\n    curl -s %s/v1/chat/completions -H 'Content-Type: application/json' -d '{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}],\"max_tokens\":32}'\n",
		url, url, url, id)
	if opts.Ready != nil {
		opts.Ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	hintf(opts.IO, "fak serve: shutting down\n")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

func weightType(m *model.Model) string {
	if len(m.Layers) == 0 {
		return "?"
	}
	return m.Layers[0].Q.Type.String()
}
