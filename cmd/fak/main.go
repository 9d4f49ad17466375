// Command fak measures LLM serving honestly. See `fak --help`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/fakhq/fak/internal/cli"
)

// Set by the Makefile with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C exits at once
	}()
	f := &cli.Factory{
		IOStreams: cli.System(),
		Now:       time.Now,
		Version:   cli.VersionInfo{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH},
	}
	root := NewCmdRoot(f)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(f.IOStreams.ErrOut, "fak:", err)
		if _, ok := err.(*cli.FlagError); ok {
			fmt.Fprintln(f.IOStreams.ErrOut, "Run 'fak --help' for usage.")
		}
	}
	os.Exit(cli.ExitCode(err))
}
