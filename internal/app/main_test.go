package app_test

import (
	"os"
	"testing"

	"github.com/postline/postline/internal/attachproc"
)

// TestMain lets this test binary be the servers' attachment worker: they
// start os.Executable() as their child process.
func TestMain(m *testing.M) {
	if attachproc.IsChild() {
		os.Exit(attachproc.ChildMain())
	}
	os.Exit(m.Run())
}
