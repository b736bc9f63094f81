package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/postline/postline/internal/validation"
)

// validateChunk is how many addresses are validated between writes: big
// enough for batching and deduplication, small enough that memory does not
// grow with the list.
const validateChunk = 1000

// cmdValidate cleans a list: one JSON result a line on stdout, in input
// order, for the addresses given or one a line on stdin.
func cmdValidate(ctx context.Context, e env, args []string) error {
	fs, l := flags(e, "validate")
	strict := fs.Bool("strict", false, "strict mode: any RFC warning makes an address invalid")
	offline := fs.Bool("offline", false, "syntax and blocklist checks only; no DNS")
	concurrency := fs.Int("concurrency", 16, "addresses validated at once")
	pos, cfg, err := parse(fs, l, args)
	if err != nil {
		return err
	}
	if *concurrency < 1 || *concurrency > 256 {
		return usagef("--concurrency must be 1 to 256")
	}
	a, err := openApp(ctx, e, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	v, err := a.NewValidator(*offline, *concurrency)
	if err != nil {
		return err
	}
	mode := validation.ModeStandard
	if *strict {
		mode = validation.ModeStrict
	}
	next := lineSource(e.stdin, pos)
	bar := progress(e.stderr, len(pos))
	out := bufio.NewWriter(e.stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	var total validation.Summary
	for {
		chunk, err := next(validateChunk)
		if err != nil {
			return err
		}
		if len(chunk) == 0 {
			break
		}
		results, sum, err := v.ValidateBatch(ctx, mode, chunk)
		if err != nil {
			return err
		}
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return err
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
	fmt.Fprintf(e.stderr, "validated %d addresses: %d valid, %d invalid (%d from cache)\n",
		total.Total, total.Valid, total.Invalid, total.Cached)
	return nil
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
