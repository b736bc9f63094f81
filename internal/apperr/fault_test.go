package apperr_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	_ "modernc.org/sqlite"

	"github.com/postline/postline/internal/apperr"
)

// sqliteFull returns the error SQLite gives when the database cannot grow:
// a real one, from a database capped by max_page_count.
func sqliteFull(t *testing.T) error {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "full.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{`CREATE TABLE t (v TEXT)`, `PRAGMA max_page_count = 3`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ {
		if _, err := db.Exec(`INSERT INTO t VALUES ($1)`, strings.Repeat("x", 1000)); err != nil {
			return err
		}
	}
	t.Fatal("a 3-page database took 100 KB")
	return nil
}

// refused returns a real "connection refused" from a closed loopback port.
func refused(t *testing.T) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = net.Dial("tcp", addr)
	if err == nil {
		t.Fatal("dialled a closed port")
	}
	return err
}

func TestClassify(t *testing.T) {
	t.Parallel()
	plain := errors.New("boom")
	notFound := apperr.Errorf(apperr.NotFound, "domain x not found")
	cases := []struct {
		name string
		err  error
		code apperr.Code // "" = unchanged
		msg  string
	}{
		{"SQLite full", fmt.Errorf("store: send: %w", sqliteFull(t)), apperr.InsufficientStorage, apperr.MsgSQLiteFull},
		{"ENOSPC", &os.PathError{Op: "write", Path: "/data/spool", Err: syscall.ENOSPC}, apperr.InsufficientStorage, apperr.MsgDiskFull},
		{"PostgreSQL disk_full", &pgconn.PgError{Code: "53100", Message: "could not extend file"}, apperr.InsufficientStorage, apperr.MsgPostgresFull},
		{"full behind Unavailable", apperr.Wrap(apperr.Unavailable, syscall.ENOSPC, "cache unavailable"), apperr.InsufficientStorage, apperr.MsgDiskFull},
		{"connection refused", refused(t), apperr.Unavailable, apperr.MsgDependencyDown},
		{"admin_shutdown", &pgconn.PgError{Code: "57P01"}, apperr.Unavailable, apperr.MsgDatabaseDown},
		{"connection failure", &pgconn.PgError{Code: "08006"}, apperr.Unavailable, apperr.MsgDatabaseDown},
		{"too many connections", &pgconn.PgError{Code: "53300"}, apperr.Unavailable, apperr.MsgDatabaseDown},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, apperr.Unavailable, apperr.MsgTimedOut},
		{"deadline", fmt.Errorf("store: get: %w", context.DeadlineExceeded), apperr.Unavailable, apperr.MsgTimedOut},
		{"hung up mid-answer", io.ErrUnexpectedEOF, apperr.Unavailable, apperr.MsgDependencyDown},
		{"bad connection", fmt.Errorf("x: %w", sql.ErrConnDone), apperr.Unavailable, apperr.MsgDatabaseDown},
		{"Internal with a cause", apperr.Wrap(apperr.Internal, &pgconn.PgError{Code: "57P03"}, "boom"), apperr.Unavailable, apperr.MsgDatabaseDown},
		{"unique violation stays", &pgconn.PgError{Code: "23505"}, "", ""},
		{"typed stays", notFound, "", ""},
		{"typed with a full cause stays", &apperr.Error{Code: apperr.Invalid, Message: "bad", Err: syscall.ENOSPC}, "", ""},
		{"unknown stays", plain, "", ""},
	}
	for _, c := range cases {
		got := apperr.Classify(c.err)
		if c.code == "" {
			if got != c.err {
				t.Errorf("%s: Classify(%v) = %v, want it unchanged", c.name, c.err, got)
			}
			continue
		}
		e, ok := apperr.As(got)
		if !ok || e.Code != c.code || e.Message != c.msg || !errors.Is(got, c.err) {
			t.Errorf("%s: Classify(%v) = %#v, want %s %q wrapping the cause", c.name, c.err, got, c.code, c.msg)
		}
	}
	if apperr.Classify(nil) != nil {
		t.Error("Classify(nil) != nil")
	}
}
