package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/fakhq/fak/internal/cli"
)

func testFactory() (*cli.Factory, *bytes.Buffer, *bytes.Buffer) {
	io, out, errOut := cli.Test()
	f := &cli.Factory{IOStreams: io, Now: time.Now, Version: cli.VersionInfo{Version: "v1.2.3", Commit: "abc", GoVersion: "go1.26", Platform: "linux/amd64"}}
	return f, out, errOut
}

func execute(t *testing.T, f *cli.Factory, cmd *cobra.Command, args ...string) error {
	t.Helper()
	root := NewCmdRoot(f)
	if cmd != nil {
		// Replace the registered command of the same name with the test's.
		for _, c := range root.Commands() {
			if c.Name() == cmd.Name() {
				root.RemoveCommand(c)
			}
		}
		root.AddCommand(cmd)
	}
	root.SetArgs(args)
	return root.ExecuteContext(context.Background())
}

func TestVersion(t *testing.T) {
	tests := []struct {
		name string
		args []string
		tty  bool
		want string
	}{
		{"plain is tab separated", []string{"version"}, false, "v1.2.3\tabc\tgo1.26\tlinux/amd64\n"},
		{"tty is for people", []string{"version"}, true, "fak v1.2.3\n  commit abc\n  go1.26 linux/amd64\n"},
		{"json", []string{"version", "--json"}, false, "{\n  \"version\": \"v1.2.3\",\n  \"commit\": \"abc\",\n  \"go_version\": \"go1.26\",\n  \"platform\": \"linux/amd64\"\n}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, out, _ := testFactory()
			f.IOStreams.SetTTY(tc.tty)
			f.IOStreams.SetColor(false)
			if err := execute(t, f, nil, tc.args...); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Fatalf("stdout %q, want %q", out.String(), tc.want)
			}
		})
	}
}

func TestFixturesModelFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		want    ModelOptions
	}{
		{"defaults", []string{"--out", "m.gguf"}, "", ModelOptions{Preset: "tiny", Quant: "f32", Seed: 1, Out: "m.gguf"}},
		{"all flags", []string{"--preset", "small", "--quant", "q4_0", "--seed", "9", "-o", "x"}, "", ModelOptions{Preset: "small", Quant: "q4_0", Seed: 9, Out: "x"}},
		{"unknown preset", []string{"--preset", "huge", "--out", "x"}, `--preset must be one of small, tiny, got "huge"`, ModelOptions{}},
		{"unknown quant", []string{"--quant", "q5_k", "--out", "x"}, "--quant must be one of", ModelOptions{}},
		{"no output", []string{}, "--out is required", ModelOptions{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _, _ := testFactory()
			var got *ModelOptions
			fixtures := &cobra.Command{Use: "fixtures"}
			fixtures.AddCommand(NewCmdFixturesModel(f, func(o *ModelOptions) error { got = o; return nil }))
			err := execute(t, f, fixtures, append([]string{"fixtures", "model"}, tc.args...)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || cli.ExitCode(err) != 2 {
					t.Fatalf("err = %v (exit %d), want exit 2 with %q", err, cli.ExitCode(err), tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Preset != tc.want.Preset || got.Quant != tc.want.Quant || got.Seed != tc.want.Seed || got.Out != tc.want.Out {
				t.Fatalf("options %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestFixturesModelRunIsReproducible(t *testing.T) {
	dir := t.TempDir()
	var sums []string
	for _, name := range []string{"a.gguf", "b.gguf"} {
		f, out, _ := testFactory()
		path := filepath.Join(dir, name)
		if err := execute(t, f, nil, "fixtures", "model", "--preset", "tiny", "--quant", "q8_0", "--seed", "5", "--out", path, "--json"); err != nil {
			t.Fatal(err)
		}
		var info struct {
			SHA256     string `json:"sha256"`
			SizeBytes  int64  `json:"size_bytes"`
			Parameters int64  `json:"parameters"`
		}
		if err := json.Unmarshal(out.Bytes(), &info); err != nil {
			t.Fatalf("--json output: %v\n%s", err, out.String())
		}
		st, err := os.Stat(path)
		if err != nil || st.Size() != info.SizeBytes || info.Parameters >= 1_000_000 {
			t.Fatalf("file %v size %d, reported %+v", err, st.Size(), info)
		}
		sums = append(sums, info.SHA256)
	}
	if sums[0] != sums[1] {
		t.Fatalf("same seed, different files: %s vs %s", sums[0], sums[1])
	}
}

func TestServeFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(*ServeOptions) bool
	}{
		{"defaults", nil, "", func(o *ServeOptions) bool { return o.Engine == "native" && o.Addr == "127.0.0.1:8080" && o.Model == "" }},
		{"model and addr", []string{"--model", "m.gguf", "--addr", ":9000"}, "", func(o *ServeOptions) bool { return o.Model == "m.gguf" && o.Addr == ":9000" }},
		{"ridden engine not yet", []string{"--engine", "vllm"}, "not available yet", nil},
		{"bad addr", []string{"--addr", "8080"}, "--addr must be host:port", nil},
		{"bad batch", []string{"--max-batch", "0"}, "--max-batch must be at least 1", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _, _ := testFactory()
			var got *ServeOptions
			err := execute(t, f, NewCmdServe(f, func(o *ServeOptions) error { got = o; return nil }), append([]string{"serve"}, tc.args...)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || cli.ExitCode(err) != 2 {
					t.Fatalf("err = %v, want exit 2 with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(got) {
				t.Fatalf("err %v, options %+v", err, got)
			}
		})
	}
}

// TestServeRun starts the real command on a generated tiny model, asks it
// one chat completion over HTTP and stops it with the context.
func TestServeRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tiny.gguf")
	f, _, _ := testFactory()
	if err := execute(t, f, nil, "fixtures", "model", "--out", path, "--quant", "q4_0"); err != nil {
		t.Fatal(err)
	}
	io, _, errOut := cli.Test()
	ready := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveRun(ctx, &ServeOptions{IO: io, Engine: "native", Model: path, Addr: "127.0.0.1:0", MaxBatch: 4, Ready: func(a string) { ready <- a }})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("serve exited early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	body := `{"model":"fak-tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"temperature":0,"stream":true}`
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	var lines []string
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			lines = append(lines, l)
		}
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(lines) < 3 || lines[len(lines)-1] != "data: [DONE]" {
		t.Fatalf("status %d, stream %q", resp.StatusCode, lines)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v on shutdown", err)
	}
	if !strings.Contains(errOut.String(), "curl -s http://"+addr) {
		t.Fatalf("no copy-paste curl line on stderr:\n%s", errOut.String())
	}
}

func TestServeRunBadModelIsInputError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.gguf")
	os.WriteFile(path, []byte("GGUF\x03\x00\x00\x00garbage"), 0o644)
	io, _, _ := cli.Test()
	err := serveRun(context.Background(), &ServeOptions{IO: io, Engine: "native", Model: path, Addr: "127.0.0.1:0", MaxBatch: 1})
	if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "byte offset") {
		t.Fatalf("err = %v (exit %d), want an input error naming the offset", err, cli.ExitCode(err))
	}
}
