package main

import (
	"bufio"
	"fmt"
	"github.com/postline/postline/internal/attachproc"
	"github.com/postline/postline/internal/testutil"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests in this file run the real binary, built once.
var (
	postline    = &testutil.Binary{Pkg: "."}
	buildBinary = postline.Build
)

func TestMain(m *testing.M) {
	if attachproc.IsChild() { // servers started in-process use this binary as their attachment worker
		os.Exit(attachproc.ChildMain())
	}
	code := m.Run()
	postline.Cleanup()
	os.Exit(code)
}

// server is a running `postline serve`.
type server struct {
	cmd  *exec.Cmd
	addr string
	out  *syncBuffer
	errs *syncBuffer // stderr: the log
	done chan error
}

// syncBuffer collects the process's stdout.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// waitFor polls stdout until it contains s.
func (s *server) waitFor(t *testing.T, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("stdout %q never contained %q", s.out.String(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s.out.String()
}

func startServe(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	return startServeUnder(t, nil, env, args...)
}

// startServeUnder is startServe with the binary run by a wrapper command
// (sh -c '...; exec "$0" "$@"', say), which gets the binary and its
// arguments after its own.
func startServeUnder(t *testing.T, wrapper []string, env []string, args ...string) *server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s, clash := tryServe(t, wrapper, env, args...)
		if s != nil {
			return s
		}
		// The free port from freeAddr was taken by someone else before the
		// process bound it: try another one.
		if !clash || attempt == 3 {
			t.Fatal("serve did not start")
		}
	}
}

// tryServe starts serve on a fresh port and waits until it is ready. It
// returns nil and whether the port was taken meanwhile when the process
// exits first; other failures end the test.
func tryServe(t *testing.T, wrapper []string, env []string, args ...string) (*server, bool) {
	t.Helper()
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	addr := testutil.FreeAddr(t)
	argv := append(append(append([]string{}, wrapper...), bin, "serve", "--addr", addr), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	stderr := &syncBuffer{}
	cmd.Stderr = io.MultiWriter(stderr, &testWriter{t: t})
	s := &server{cmd: cmd, addr: addr, out: &syncBuffer{}, errs: stderr, done: make(chan error, 1)}
	cmd.Stdout = s.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, false
			}
		}
		select {
		case exit := <-s.done:
			if strings.Contains(stderr.String(), "address already in use") {
				return nil, true
			}
			t.Fatalf("serve on %s exited before it was ready (%v):\n%s", addr, exit, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve on %s not ready: %v\n%s", addr, err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type testWriter struct {
	t  *testing.T
	mu sync.Mutex
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if testing.Verbose() {
		w.t.Logf("serve: %s", strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func (s *server) get(t *testing.T, path, login, key string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+s.addr+path, nil)
	req.SetBasicAuth(login, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func (s *server) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM, want status 0", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop within 20 s of SIGTERM")
	}
}

func TestServeBootstrapsOnceAndStopsCleanly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := []string{"POSTLINE_DATA_DIR=" + dir}
	s := startServe(t, env)
	printed := s.waitFor(t, "Try: curl")
	key := ""
	for _, f := range strings.Fields(printed) {
		if strings.HasPrefix(f, "pl_") {
			key = f
			break
		}
	}
	if key == "" {
		t.Fatalf("first start printed no key: %q", printed)
	}
	if resp := s.get(t, "/api/domains", "admin", key); resp.StatusCode != 200 {
		t.Fatalf("bootstrap key: GET /api/domains = %d", resp.StatusCode)
	}
	// It says where the console is and how to sign in (issue 32, defect 2).
	if !strings.Contains(printed, "Console: http://"+s.addr+"/\n  Sign in with the login admin and the API key above") {
		t.Errorf("first start does not say where the console is and how to sign in: %q", printed)
	}
	// The CLI works on the same SQLite file while serve runs.
	code, out, errs := cli(t, dir, "key", "create", "admin")
	if code != 0 {
		t.Fatalf("key create while serving: %d %s", code, errs)
	}
	if resp := s.get(t, "/api/domains", "admin", strings.TrimSpace(out)); resp.StatusCode != 200 {
		t.Fatalf("key made while serving: GET /api/domains = %d", resp.StatusCode)
	}
	s.stop(t)

	again := startServe(t, env)
	again.stop(t)
	if out := again.out.String(); strings.Contains(out, "pl_") {
		t.Fatalf("second start printed a key again: %q", out)
	} else if !strings.Contains(out, "Console: http://"+again.addr+"/\n  Sign in with your login and one of your API keys, "+
		"or with a console password (set one with: postline user password LOGIN).") {
		t.Errorf("second start does not say where the console is and how to sign in: %q", out)
	}
}

func TestServeGracefulShutdownFinishesInFlight(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServe(t, []string{"POSTLINE_DATA_DIR=" + dir})
	// A slow client upload is in flight when SIGTERM arrives; it must still
	// get its answer.
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"name":"x"}`
	fmt.Fprintf(conn, "POST /api/domains HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nAuthorization: Basic eDp5\r\n\r\n", len(body))
	time.Sleep(200 * time.Millisecond)
	s.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond)
	fmt.Fprint(conn, body)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(status, "401") {
		t.Fatalf("in-flight request during shutdown: %q, %v; want its 401 answer", status, err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not exit")
	}
}
