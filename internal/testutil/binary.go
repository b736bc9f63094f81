package testutil

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildBinary builds the postline command at pkg (a path relative to the
// calling test's package) into dir, for tests that run the real binary.
func BuildBinary(dir, pkg string) (string, error) {
	bin := filepath.Join(dir, "postline")
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// FreeAddr is a loopback address nothing listens on (yet).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
