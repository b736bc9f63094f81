package attach

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// sevenZip returns the 7z binary. Without it the test is skipped, except in
// CI (CI=true), where .ci/run installs p7zip-full and its absence is a
// failure.
func sevenZip(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("7z")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("7z is required in CI (apt-get install -y p7zip-full): %v", err)
	}
	t.Skip("7z not installed (apt-get install -y p7zip-full); skipping the check against 7-Zip")
	return ""
}

func TestSevenZip(t *testing.T) {
	t.Parallel()
	bin := sevenZip(t)
	files := archiveFiles()
	for _, tt := range []struct {
		name string
		opts Options
	}{
		{"plain", Options{Compress: true}},
		{"aes", Options{Password: "correct horse battery"}},
		{"aes-unicode-password", Options{Password: "pässwörd ☃ 1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Process(context.Background(), files, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			zipPath := filepath.Join(dir, ArchiveName)
			if err := os.WriteFile(zipPath, res.Files[0].Data, 0o600); err != nil {
				t.Fatal(err)
			}
			run := func(args ...string) ([]byte, error) {
				return exec.Command(bin, args...).CombinedOutput()
			}
			if out, err := run("t", "-p"+tt.opts.Password, zipPath); err != nil {
				t.Fatalf("7z t: %v\n%s", err, out)
			}
			outDir := filepath.Join(dir, "out")
			if out, err := run("x", "-y", "-p"+tt.opts.Password, "-o"+outDir, zipPath); err != nil {
				t.Fatalf("7z x: %v\n%s", err, out)
			}
			for i, name := range archiveNames {
				got, err := os.ReadFile(filepath.Join(outDir, name))
				if err != nil || !bytes.Equal(got, files[i].Data) {
					t.Errorf("7z extracted %s: %d bytes, %v; want %d identical bytes", name, len(got), err, len(files[i].Data))
				}
			}
			if tt.opts.Password != "" {
				if out, err := run("t", "-pwrong-password", zipPath); err == nil {
					t.Errorf("7z t with a wrong password succeeded:\n%s", out)
				}
			}
		})
	}
}
