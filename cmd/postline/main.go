// Command postline is the whole service in one binary: `postline serve`
// runs the API; the other subcommands manage accounts, keys and domains on
// the same database. Exit status: 0 on success, 2 on usage errors, 1
// otherwise, with the reason on stderr.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/postline/postline/internal/attachproc"
)

func main() {
	if attachproc.IsChild() { // the server's attachment worker (internal/attachproc)
		os.Exit(attachproc.ChildMain())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// env is the process environment a command sees; tests supply their own.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// usageError makes run exit with status 2. silent ones were explained
// already (a usage text was printed).
type usageError struct {
	msg    string
	silent bool
}

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{msg: fmt.Sprintf(format, args...)} }

func run(ctx context.Context, args []string, e env) int {
	err := dispatch(ctx, e, commandTree(), nil, args)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		if !ue.silent {
			fmt.Fprintln(e.stderr, ue.msg)
		}
		return 2
	default:
		fmt.Fprintln(e.stderr, err)
		return 1
	}
}
