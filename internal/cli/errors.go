package cli

import (
	"context"
	"errors"
	"fmt"
)

// FlagError is a bad flag or flag combination: exit 2, usage printed.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// FlagErrorf returns a *FlagError.
func FlagErrorf(format string, args ...any) error {
	return &FlagError{Err: fmt.Errorf(format, args...)}
}

// InputError is input that cannot be used (an unreadable or malformed
// file): exit 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// CheckError is a run that finished but failed a check (gate, verify,
// validity): exit 1.
type CheckError struct{ Err error }

func (e *CheckError) Error() string { return e.Err.Error() }
func (e *CheckError) Unwrap() error { return e.Err }

// Exit codes.
const (
	ExitOK          = 0
	ExitCheckFailed = 1
	ExitBadInput    = 2
	ExitRunFailed   = 3
	ExitInterrupted = 130
)

// ExitCode maps an error to the process exit code.
func ExitCode(err error) int {
	var fe *FlagError
	var ie *InputError
	var ce *CheckError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ce):
		return ExitCheckFailed
	case errors.As(err, &fe), errors.As(err, &ie):
		return ExitBadInput
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
	return ExitRunFailed
}
