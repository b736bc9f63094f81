package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeBuild is the build command the README documents for production.
var readmeBuild = regexp.MustCompile("(?m)^CGO_ENABLED=0 go build [^\n]*-o postline ./cmd/postline$")

// TestStaticBinary runs the README's production build command and checks
// the result is statically linked (no interpreter, no shared libraries),
// and that the Dockerfile builds with the same command.
func TestStaticBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if os.Getenv("POSTLINE_TEST_DATABASE_URL") != "" {
		t.Skip("store-independent: runs in the SQLite pass only")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmdline := readmeBuild.FindString(string(readme))
	if cmdline == "" {
		t.Fatal("README.md has no `CGO_ENABLED=0 go build ... -o postline ./cmd/postline` line")
	}
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	inDocker := strings.Replace(cmdline, "-o postline", "-o /out/postline", 1)
	if !strings.Contains(string(dockerfile), "RUN "+inDocker) {
		t.Errorf("the Dockerfile does not build with the README's command %q (want a line `RUN %s`)", cmdline, inDocker)
	}

	out := filepath.Join(t.TempDir(), "postline")
	build := exec.Command("sh", "-c", strings.Replace(cmdline, "-o postline", "-o "+out, 1)) // the line as a shell reads it
	build.Dir = "../.."
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is dynamically linked", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
	if v, err := exec.Command(out, "version").Output(); err != nil || !strings.HasPrefix(string(v), "postline") {
		t.Errorf("the static binary does not run: %q, %v", v, err)
	}
}
