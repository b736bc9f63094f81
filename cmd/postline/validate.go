package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/validation"
)

// validateChunk is how many addresses are validated between writes: big
// enough for batching and deduplication, small enough that memory does not
// grow with the list.
const validateChunk = 1000

func setupValidate(fs *flag.FlagSet) runFunc {
	strict := fs.Bool("strict", false, "strict mode: any RFC warning makes an address invalid")
	offline := fs.Bool("offline", false, "syntax and blocklist checks only: no DNS, no database")
	refresh := fs.Bool("refresh", false, "ignore cached results: validate anew and replace them in the cache")
	concurrency := fs.Int("concurrency", 16, "addresses validated at once, 1 to 256")
	checkMailbox := fs.Bool("check-mailbox", false, "probe each mailbox at its MX (needs --validation-smtp-probe and --validation-helo)")
	return func(ctx context.Context, x *inv) error {
		if *concurrency < 1 || *concurrency > 256 {
			return usagef("--concurrency must be 1 to 256, got %d", *concurrency)
		}
		if *offline && *refresh {
			return usagef("--refresh needs the cache, which --offline does not use")
		}
		o := app.ValidatorOptions{Offline: *offline, Refresh: *refresh, Concurrency: *concurrency}
		v, a, err := validatorFor(ctx, x, o)
		if err != nil {
			return err
		}
		if *checkMailbox {
			if !v.Probing() {
				return usagef("--check-mailbox needs mailbox probing: add --validation-smtp-probe and --validation-helo NAME (and no --offline)")
			}
			ctx = validation.WithMailboxCheck(ctx)
		}
		mode := validation.ModeStandard
		if *strict {
			mode = validation.ModeStrict
		}
		total, err := validateLines(ctx, x, v, mode)
		if err != nil {
			return err
		}
		if a != nil && *refresh && total.Validated > 0 {
			if err := a.ValidationCacheChanged(ctx); err != nil {
				return err
			}
		}
		noun := "addresses"
		if total.Total == 1 {
			noun = "address"
		}
		fmt.Fprintf(x.stderr, "validated %d %s: %d valid, %d invalid (%d from cache)\n",
			total.Total, noun, total.Valid, total.Invalid, total.Cached)
		return nil
	}
}

// validatorFor builds the validator: with the server's shared cache when
// there is a database, else (offline, or before the first `serve`) one
// that opens nothing.
func validatorFor(ctx context.Context, x *inv, o app.ValidatorOptions) (*validation.Validator, *app.App, error) {
	if !o.Offline {
		a, err := x.app(ctx)
		if err == nil {
			v, err := a.NewValidator(o)
			if err == nil {
				// The operator sees every account's bounces (AllAccounts).
				err = a.LoadBounceHistory(ctx)
			}
			return v, a, err
		}
		p, sqlite := x.cfg.SQLitePath()
		if _, statErr := os.Stat(p); !sqlite || !errors.Is(statErr, os.ErrNotExist) {
			return nil, nil, err
		}
		if o.Refresh {
			return nil, nil, err
		}
		fmt.Fprintf(x.stderr, "note: no database at %s, so results are not cached\n", p)
	}
	v, err := app.StandaloneValidator(x.cfg, o)
	return v, nil, err
}

// validateLines validates the arguments, or stdin's lines, in chunks and
// writes one JSON result a line in input order.
func validateLines(ctx context.Context, x *inv, v *validation.Validator, mode validation.Mode) (validation.Summary, error) {
	next := lineSource(x.stdin, x.args)
	bar := progress(x.stderr, len(x.args))
	out := bufio.NewWriter(x.stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	var total validation.Summary
	for {
		chunk, err := next(validateChunk)
		if err != nil {
			return total, err
		}
		if len(chunk) == 0 {
			break
		}
		results, sum, err := v.ValidateBatchAs(ctx, validation.AllAccounts, mode, chunk)
		if err != nil {
			return total, err
		}
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return total, err
			}
		}
		total.Total += sum.Total
		total.Valid += sum.Valid
		total.Invalid += sum.Invalid
		total.Cached += sum.Cached
		total.Validated += sum.Validated
		if bar != nil {
			bar.Add(len(chunk)) //nolint:errcheck // progress only
		}
	}
	if bar != nil {
		bar.Finish() //nolint:errcheck
	}
	return total, nil
}

// lineSource returns a function giving up to n addresses at a time: the
// arguments, or stdin's non-blank lines when there are none.
func lineSource(stdin io.Reader, args []string) func(n int) ([]string, error) {
	if len(args) > 0 {
		return func(n int) ([]string, error) {
			k := min(n, len(args))
			chunk := args[:k]
			args = args[k:]
			return chunk, nil
		}
	}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return func(n int) ([]string, error) {
		var chunk []string
		for len(chunk) < n && sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				chunk = append(chunk, line)
			}
		}
		return chunk, sc.Err()
	}
}

// progress returns a progress bar on stderr when it is a terminal.
func progress(w io.Writer, total int) *progressbar.ProgressBar {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	if total == 0 {
		total = -1 // reading stdin: unknown length, a spinner with a count
	}
	return progressbar.NewOptions(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription("validating"),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(100_000_000))
}
