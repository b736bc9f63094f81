package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// serve --cpu-profile FILE writes a CPU profile of its run when it stops,
// one that go tool pprof reads and that shows serve's own functions.
func TestServeCPUProfile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.pprof")
	s := startServe(t, []string{"POSTLINE_DATA_DIR=" + dir}, "--cpu-profile", prof)
	for range 200 {
		s.get(t, "/api/domains", "nobody", "wrong") // some work for the profile to show
	}
	if _, err := os.Stat(prof); err == nil {
		if b, _ := os.ReadFile(prof); len(b) > 0 {
			t.Fatalf("the profile has %d bytes before serve stopped: it is written at the end", len(b))
		}
	}
	s.stop(t)
	if !strings.Contains(s.errs.String(), "CPU profile written") {
		t.Errorf("serve's log does not say the profile was written:\n%s", s.errs.String())
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount", "500", bin, prof).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof cannot read the profile: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Type: cpu") {
		t.Errorf("go tool pprof -top does not show a CPU profile:\n%s", out)
	}
}

// A --cpu-profile that cannot be created stops serve at start, naming it.
func TestServeCPUProfileUnwritable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, errs := cli(t, dir, "serve", "--addr", "127.0.0.1:0", "--cpu-profile", filepath.Join(dir, "missing", "cpu.pprof"))
	if code == 0 || !strings.Contains(errs, "--cpu-profile") || !strings.Contains(errs, "missing") {
		t.Errorf("serve with an unwritable --cpu-profile: exit %d, stderr %q; want a failure naming the flag and the file", code, errs)
	}
}
