// Package attachproc runs attachment processing (watermarking PDFs and
// images, archiving, encryption), and the checks of those files before a
// send is accepted, in a child process of the same binary, with an
// address-space limit and a time limit: a hostile file (a decompression
// bomb, a PDF that loops) kills the child, never the server, and its
// inflated streams never reach the server's heap.
//
// The child is the running executable started with EnvChild set; it reads
// one gob-encoded Request on stdin and writes one Response on stdout.
// Binaries (and test binaries) that may be children call IsChild and
// ChildMain first thing.
package attachproc

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/attach"
)

// Environment of the child: EnvChild marks it, EnvMemory is its
// address-space limit in bytes.
const (
	EnvChild  = "POSTLINE_ATTACH_WORKER"
	EnvMemory = "POSTLINE_ATTACH_MEMORY"
)

// ErrFailed is processing that did not finish: the child ran out of its
// memory or time, or died. The send's files cannot be processed.
var ErrFailed = errors.New("attachment processing failed")

// Request is what the child processes; with Check it only runs
// attach.Validate on the files.
type Request struct {
	Files   []attach.File
	Options attach.Options
	Check   bool
}

// Response is the child's answer: the result, or the error text; a
// refusal of Check is Invalid (by field) with its Message.
type Response struct {
	Result  attach.Result
	Error   string
	Invalid map[string][]string
	Message string
}

// IsChild reports whether this process was started as a child.
func IsChild() bool { return os.Getenv(EnvChild) == "1" }

// ChildMain serves one request on stdin/stdout and returns the exit code.
func ChildMain() int {
	if n, err := strconv.ParseInt(os.Getenv(EnvMemory), 10, 64); err == nil && n > 0 {
		// The hard limit: the address space may grow by n past what the Go
		// runtime has reserved at start (hundreds of MiB of reservations
		// that are not memory), plus one heap arena of slack; an allocation
		// past it fails and the runtime exits. The runtime reserves heap in
		// 64 MiB arenas and its own bookkeeping (GC bits, span lists) outside
		// them: without the slack a child under a small limit died on
		// bookkeeping while processing a small image (seen under load). The
		// soft limit makes the collector work well before that.
		limit := uint64(vmSize() + n + arenaSlack)
		syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}) //nolint:errcheck // best effort
		debug.SetMemoryLimit(n / 2)
	}
	var req Request
	if err := gob.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "attach-worker: reading the request:", err)
		return 2
	}
	var resp Response
	if req.Check {
		if err := attach.Validate(req.Files, req.Options); err != nil {
			resp.Error = err.Error()
			if e, ok := apperr.As(err); ok && e.Code == apperr.Invalid {
				resp.Invalid, resp.Message = e.Fields, e.Message
			}
		}
	} else {
		res, err := attach.Process(context.Background(), req.Files, req.Options)
		resp.Result = res
		if err != nil {
			resp.Error = err.Error()
		}
	}
	if err := gob.NewEncoder(os.Stdout).Encode(resp); err != nil {
		fmt.Fprintln(os.Stderr, "attach-worker: writing the result:", err)
		return 2
	}
	return 0
}

// arenaSlack is one Go heap arena on 64-bit Linux.
const arenaSlack = 64 << 20

// vmSize is the process's address space now (VmSize, bytes; 0 unknown).
func vmSize() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Runner starts children.
type Runner struct {
	// Exe is the executable to start (os.Executable() of the server).
	Exe string
	// Memory is the child's address-space limit in bytes (0: none).
	Memory int64
	// Timeout bounds one child's run (0: 2 minutes).
	Timeout time.Duration
	// Slots, when set, bounds the children running at once (its capacity):
	// each may take Memory.
	Slots chan struct{}
}

// Process runs attach.Process in a child. Errors of the processing itself
// come back as they are; a child that was killed or died is ErrFailed with
// the reason.
func (r Runner) Process(ctx context.Context, files []attach.File, opts attach.Options) (attach.Result, error) {
	resp, err := r.run(ctx, Request{Files: files, Options: opts})
	if err != nil {
		return attach.Result{}, err
	}
	if resp.Error != "" {
		return attach.Result{}, errors.New(resp.Error)
	}
	return resp.Result, nil
}

// Check runs attach.Validate, the checks before a send is accepted, in a
// child when they read the files (watermarking PDFs or images): parsing a
// PDF inflates its streams, 20 of them per request. Its refusals come back
// as attach.Validate's; a file that kills the child, or outlasts its time,
// is refused as one that could not be checked.
func (r Runner) Check(ctx context.Context, files []attach.File, opts attach.Options) error {
	if !opts.Watermark.Enabled || attach.Watermarkable(files) == 0 {
		return attach.Validate(files, opts) // the options only: nothing to inflate
	}
	resp, err := r.run(ctx, Request{Files: files, Options: opts, Check: true})
	switch {
	case errors.Is(err, ErrFailed):
		msg := fmt.Sprintf("The attachments could not be checked for watermarking: %v.", strings.TrimPrefix(err.Error(), ErrFailed.Error()+": "))
		return &apperr.Error{Code: apperr.Invalid, Message: "Invalid attachments", Fields: map[string][]string{"attachments": {msg}}, Err: err}
	case err != nil:
		return err
	case resp.Invalid != nil:
		return &apperr.Error{Code: apperr.Invalid, Message: resp.Message, Fields: resp.Invalid}
	case resp.Error != "":
		return errors.New(resp.Error)
	}
	return nil
}

// run serves req in a child, one at a time per slot when Slots is set.
func (r Runner) run(ctx context.Context, req Request) (Response, error) {
	if r.Slots != nil {
		select {
		case r.Slots <- struct{}{}:
			defer func() { <-r.Slots }()
		case <-ctx.Done():
			return Response{}, ctx.Err()
		}
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var in bytes.Buffer
	if err := gob.NewEncoder(&in).Encode(req); err != nil {
		return Response{}, err
	}
	cmd := exec.CommandContext(ctx, r.Exe)
	cmd.Env = append(os.Environ(), EnvChild+"=1", EnvMemory+"="+strconv.FormatInt(r.Memory, 10))
	cmd.Stdin = &in
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &limited{w: &stderr, n: 4096}
	err := cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return Response{}, fmt.Errorf("%w: it took longer than %s", ErrFailed, timeout)
	case ctx.Err() != nil:
		return Response{}, ctx.Err() // the server is stopping: retried later
	case err != nil:
		why := firstLine(stderr.String())
		if strings.Contains(stderr.String(), "out of memory") {
			why = fmt.Sprintf("it needed more than the limit of %d MiB of memory", r.Memory>>20)
		}
		return Response{}, fmt.Errorf("%w: %s", ErrFailed, why)
	}
	var resp Response
	if err := gob.NewDecoder(&out).Decode(&resp); err != nil {
		return Response{}, fmt.Errorf("%w: unreadable answer: %v", ErrFailed, err)
	}
	return resp, nil
}

func firstLine(s string) string {
	if l, _, _ := strings.Cut(strings.TrimSpace(s), "\n"); l != "" {
		return l
	}
	return "the worker process died"
}

// limited keeps the first n bytes written (a dying runtime prints stacks).
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k]) //nolint:errcheck // a buffer
		l.n -= k
	}
	return len(p), nil
}
