package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fakhq/fak/internal/cli"
)

// NewCmdVersion builds `fak version`.
func NewCmdVersion(f *cli.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := f.Version
			if *f.JSON {
				return printJSON(f.IOStreams, v)
			}
			if f.IOStreams.IsStdoutTTY() {
				st := f.IOStreams.Style()
				fmt.Fprintf(f.IOStreams.Out, "%s %s\n  commit %s\n  %s %s\n", st.B("fak"), v.Version, v.Commit, v.GoVersion, v.Platform)
				return nil
			}
			fmt.Fprintf(f.IOStreams.Out, "%s\t%s\t%s\t%s\n", v.Version, v.Commit, v.GoVersion, v.Platform)
			return nil
		},
	}
}
