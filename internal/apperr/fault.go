package apperr

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// Messages of the faults Classify recognises; clients and tests match on
// them, and each names its cause so an operator reading a client's report
// knows what to fix.
const (
	MsgDiskFull       = "Insufficient storage: the server's disk is full (no space left on device); nothing was stored. Retry once space has been freed"
	MsgSQLiteFull     = "Insufficient storage: the database or disk is full (SQLite); nothing was stored. Retry once space has been freed"
	MsgPostgresFull   = "Insufficient storage: the database's disk is full (PostgreSQL SQLSTATE 53100 disk_full); nothing was stored. Retry once space has been freed"
	MsgDatabaseDown   = "The database is unavailable; retry later"
	MsgDependencyDown = "A service the server depends on is unavailable; retry later"
	MsgTimedOut       = "The database did not answer in time; retry later"
)

// Classify types an error that no service typed by what caused it, so that
// a fault answers what it is instead of a bare 500: a full disk is
// InsufficientStorage, a database that cannot be reached or did not answer
// in time is Unavailable. Errors typed otherwise than Internal or
// Unavailable, and faults it does not recognise, come back unchanged; an
// Unavailable error whose cause is a full disk becomes InsufficientStorage.
//
// It recognises causes by the shapes drivers give them, so that this leaf
// package imports no driver: PostgreSQL's SQLSTATE (an error with a
// SQLState() string method: pgx, lib/pq), SQLite's result code (a Code()
// int method: modernc), errno values, net.Error, database/sql's broken
// connections and context deadlines.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	if e, ok := As(err); ok && e.Code != Internal && e.Code != Unavailable {
		return err
	}
	if msg := fullCause(err); msg != "" {
		return &Error{Code: InsufficientStorage, Message: msg, Err: err}
	}
	if e, ok := As(err); ok && e.Code == Unavailable {
		return err
	}
	if msg := unavailableCause(err); msg != "" {
		return &Error{Code: Unavailable, Message: msg, Err: err}
	}
	return err
}

// sqlState is PostgreSQL drivers' error with its SQLSTATE.
type sqlState interface{ SQLState() string }

// resultCode is SQLite drivers' error with its (extended) result code.
type resultCode interface{ Code() int }

const sqliteFull = 13 // SQLITE_FULL; extended codes keep it in the low byte

func fullCause(err error) string {
	var st sqlState
	if errors.As(err, &st) && st.SQLState() == "53100" {
		return MsgPostgresFull
	}
	var rc resultCode
	if errors.As(err, &rc) && rc.Code()&0xff == sqliteFull {
		return MsgSQLiteFull
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return MsgDiskFull
	}
	return ""
}

func unavailableCause(err error) string {
	var st sqlState
	if errors.As(err, &st) {
		switch s := st.SQLState(); {
		case strings.HasPrefix(s, "08"), // connection exception
			strings.HasPrefix(s, "53"),               // insufficient resources: too many connections, out of memory
			s == "57P01", s == "57P02", s == "57P03", // admin or crash shutdown, cannot connect now
			s == "25006": // read-only transaction: a standby after a failover
			return MsgDatabaseDown
		case s == "57014": // query canceled: statement_timeout
			return MsgTimedOut
		}
		return ""
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return MsgTimedOut
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone):
		return MsgDatabaseDown
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// A peer that hung up mid-answer; from the server's own
		// dependencies, as a client's hang-up never reaches here.
		return MsgDependencyDown
	}
	// pgx's errors for a connection it closed ("conn closed", "conn
	// busy") say they were never sent: the database went away under them.
	var retry interface{ SafeToRetry() bool }
	if errors.As(err, &retry) && retry.SafeToRetry() {
		return MsgDatabaseDown
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		return MsgDependencyDown
	}
	return ""
}
