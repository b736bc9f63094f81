package app_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postline/postline/internal/store"
)

// TestZipPasswordNeverStoredInClear: a ZIP password is used once, by the
// job that encrypts the attachments. After delivery it is nowhere in the
// data directory (database, WAL, anything) nor in PostgreSQL's WAL.
func TestZipPasswordNeverStoredInClear(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		start := time.Now()
		e := startSend(t, d, false, nil)
		const password = "Xq7-unlikely-zip-password-4711"
		files := []part{{name: "attachments", filename: "invoice.txt", contentType: "text/plain", value: "total: 42"}}
		resp := e.send(t, append(append(basicParts("ann@rcpt.example.net"), files...),
			part{name: "attachment_options", value: `{"password":"` + password + `"}`}), nil)
		if resp.StatusCode != 202 {
			t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
		}
		msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1)
		if err != nil {
			t.Fatal(err)
		}
		_, data := onlyAttachment(t, msgs[0].Data)
		defer check7z(t, data, password) // last: it skips the test where 7z is missing

		checked := 0
		err = filepath.WalkDir(e.App.Config.DataDir, func(path string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			checked++
			if bytes.Contains(b, []byte(password)) {
				t.Errorf("the ZIP password is readable in %s", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if d == store.SQLite && checked < 2 {
			t.Fatalf("looked at %d files in %s, want the database and its WAL at least", checked, e.App.Config.DataDir)
		}
		if d == store.Postgres {
			checkPostgresWAL(t, e.App.DB, start, password)
		}
	})
}

// checkPostgresWAL reads the WAL segments written since start through
// pg_read_binary_file (the test role is a superuser) and looks for needle.
func checkPostgresWAL(t *testing.T, db *store.DB, start time.Time, needle string) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.Writer().ExecContext(ctx, `SELECT pg_switch_wal()`); err != nil {
		t.Fatalf("pg_switch_wal: %v", err) // flush the current segment to its file
	}
	// Segment names only: the directory also holds xlogtemp.* files that
	// come and go while other tests write.
	rows, err := db.Reader().QueryContext(ctx, `SELECT name FROM pg_ls_waldir()
		WHERE modification >= $1 AND name ~ '^[0-9A-F]{24}$' ORDER BY name`,
		start.Add(-2*time.Second))
	if err != nil {
		t.Fatalf("pg_ls_waldir: %v", err)
	}
	var names []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	if len(names) == 0 {
		t.Fatal("no WAL segment written during the test")
	}
	read := 0
	for _, n := range names {
		// missing_ok: a checkpoint may recycle a segment (rename it to a
		// future name) between the listing and the read.
		var seg []byte
		if err := db.Reader().QueryRowContext(ctx, `SELECT pg_read_binary_file('pg_wal/' || $1, 0, 268435456, true)`, n).Scan(&seg); err != nil {
			t.Fatalf("reading WAL segment %s: %v", n, err)
		}
		if seg == nil {
			continue
		}
		read++
		if bytes.Contains(seg, []byte(needle)) {
			t.Errorf("the ZIP password is readable in PostgreSQL's WAL segment %s", n)
		}
	}
	if read == 0 {
		t.Fatalf("none of the %d WAL segments written during the test could be read", len(names))
	}
}
