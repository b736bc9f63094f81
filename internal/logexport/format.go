package logexport

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/validation"
)

// Format is an export's file format.
type Format string

// The formats.
const (
	CSV    Format = "csv"
	NDJSON Format = "ndjson"
)

// ParseFormat reads the format parameter; empty is CSV.
func ParseFormat(v string) (Format, error) {
	switch Format(v) {
	case "", CSV:
		return CSV, nil
	case NDJSON:
		return NDJSON, nil
	}
	return "", apperr.Field("format", "The format must be csv or ndjson.")
}

// ContentType is the format's media type.
func (f Format) ContentType() string {
	if f == NDJSON {
		return "application/x-ndjson"
	}
	return "text/csv; charset=utf-8"
}

// Columns are the CSV columns: the API's entry fields, then the
// receiving server's reply (event.Reply) split out of the details.
var Columns = []string{"id", "created_at", "event_type", "message_id", "sender", "recipient", "subject", "tags",
	"smtp_code", "enhanced_code", "smtp_reply", "details"}

// writer writes batches of entries in one format; flush sends what was
// written so far to the client.
type writer interface {
	header() error
	batch(es []event.Entry) error
}

func newWriter(f Format, w io.Writer) writer {
	if f == NDJSON {
		return &ndjsonWriter{w: w}
	}
	return &csvWriter{cw: csv.NewWriter(w)}
}

type csvWriter struct {
	cw  *csv.Writer
	rec []string
}

func (c *csvWriter) header() error {
	c.cw.Write(Columns) //nolint:errcheck // reported by Flush
	c.cw.Flush()
	return c.cw.Error()
}

func (c *csvWriter) batch(es []event.Entry) error {
	for _, e := range es {
		r := e.Reply()
		code := ""
		if r.Code != 0 {
			code = strconv.Itoa(r.Code)
		}
		c.rec = append(c.rec[:0], strconv.FormatInt(e.ID, 10), e.CreatedAt.UTC().Format(time.RFC3339Nano), string(e.Type),
			e.MessageID, e.Sender, e.Recipient, e.Subject, e.Tags, code, r.Enhanced, r.Text, string(e.Details))
		// A subject such as =HYPERLINK(...) is the sender's text and a formula to a spreadsheet.
		c.cw.Write(validation.SpreadsheetSafe(c.rec)) //nolint:errcheck // reported by Flush
	}
	c.cw.Flush()
	return c.cw.Error()
}

type ndjsonWriter struct {
	w   io.Writer
	buf []byte // reused: one write per batch
}

func (n *ndjsonWriter) header() error { return nil }

func (n *ndjsonWriter) batch(es []event.Entry) error {
	b := n.buf[:0]
	for _, e := range es {
		b = append(event.AppendJSON(b, e), '\n')
	}
	n.buf = b
	_, err := n.w.Write(b)
	return err
}
