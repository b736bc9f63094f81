package testutil

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

// SmallDisk mounts a tmpfs of size bytes on a new directory and returns it,
// unmounted at cleanup: a real file system that runs out of space (ENOSPC)
// for disk-full tests. It needs Linux and root, and skips the test, saying
// why, without them.
func SmallDisk(t testing.TB, size int64) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("a disk-full test mounts a tmpfs: Linux only")
	}
	if os.Geteuid() != 0 {
		t.Skip("a disk-full test mounts a small tmpfs, which needs root; run the tests as root to include it")
	}
	dir := filepath.Join(t.TempDir(), "small-disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("a disk-full test mounts a small tmpfs, which failed here (a container without CAP_SYS_ADMIN?): %v: %s", err, out)
	}
	t.Cleanup(func() {
		// Lazily: a database the test left open must not keep the mount.
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// FillDisk writes a file in dir until the file system is full, and
// returns a function that removes it (the space comes back).
func FillDisk(t testing.TB, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for written := 0; ; written += len(buf) {
		if _, err = f.Write(buf); err != nil {
			break
		}
		if written > 1<<30 {
			t.Fatal("FillDisk: wrote 1 GiB and the disk is not full; is it the small disk?")
		}
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("FillDisk: %v, want no space left on device", err)
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
	}
}
