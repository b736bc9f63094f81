package validation

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/postline/postline/internal/apperr"
)

// List is an uploaded list: its addresses in input order and, for a CSV
// with a header, each line's other cells, kept for the results.
type List struct {
	Emails []string
	// Columns names the other columns of a CSV (its header without the
	// address column); none for a list of lines.
	Columns []string
	// Rows are each address's other cells, as Columns; nil for a list of
	// lines.
	Rows [][]string
}

// addressHeaders are the header names that mark the address column of a
// CSV (else it is the first).
var addressHeaders = map[string]bool{"email": true, "e-mail": true, "email address": true, "e-mail address": true,
	"emailaddress": true, "address": true, "mail": true}

// ReadList reads an uploaded list. A file whose first non-blank line has
// no @ is a CSV with a header (comma-, semicolon- or tab-separated): the
// address is in the column named email (or address, e-mail ...), else in
// the first, and the other columns are kept. Any other file is read as
// lines, one address a line as written: quotes are part of an address
// ("john doe"@example.net), not CSV. Blank lines are skipped; a UTF-8 byte
// order mark is ignored. At most limit addresses (apperr.Invalid naming
// file past it, or for a CSV that does not parse); a read error (a body
// cut at its limit) is returned as it is.
func ReadList(r io.Reader, limit int) (List, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		br.Discard(3) //nolint:errcheck // peeked
	}
	// Mailgun takes gzip and zip lists; read as text their bytes became a
	// job of garbage lines.
	if magic, _ := br.Peek(4); bytes.HasPrefix(magic, []byte{0x1f, 0x8b}) || bytes.HasPrefix(magic, []byte("PK\x03\x04")) {
		return List{}, apperr.Field("file", "The list is compressed (gzip or zip): upload the CSV or text file itself.")
	}
	var first string // the first non-blank line, as read
	for {
		line, err := br.ReadString('\n')
		if strings.TrimSpace(line) != "" {
			first = line
			break
		}
		if errors.Is(err, io.EOF) {
			return List{}, nil
		}
		if err != nil {
			return List{}, err
		}
	}
	rest := io.MultiReader(strings.NewReader(first), br)
	if strings.Contains(first, "@") {
		return readLines(bufio.NewReader(rest), limit)
	}
	return readCSV(rest, first, limit)
}

func readLines(br *bufio.Reader, limit int) (List, error) {
	var l List
	for {
		line, err := br.ReadString('\n')
		if v := strings.TrimSpace(line); v != "" {
			if len(l.Emails) == limit {
				return List{}, tooManyLines(limit)
			}
			if err := storable(v, len(l.Emails)+1); err != nil {
				return List{}, err
			}
			l.Emails = append(l.Emails, v)
		}
		if errors.Is(err, io.EOF) {
			return l, nil
		}
		if err != nil {
			return List{}, err
		}
	}
}

func readCSV(r io.Reader, header string, limit int) (List, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord, cr.LazyQuotes = -1, true
	switch {
	case strings.Count(header, ";") > strings.Count(header, ","):
		cr.Comma = ';'
	case strings.Count(header, "\t") > strings.Count(header, ","):
		cr.Comma = '\t'
	}
	var l List
	at := 0
	wide := 0 // the most cells of a line
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return List{}, apperr.Field("file", fmt.Sprintf("line %d cannot be read as CSV: %v", pe.Line, pe.Err))
		} else if err != nil {
			return List{}, err
		}
		if line == 1 {
			at = addressColumn(rec)
			for i, name := range rec {
				if i != at {
					l.Columns = append(l.Columns, strings.TrimSpace(name))
				}
			}
			wide = len(rec)
			continue
		}
		email := ""
		if at < len(rec) {
			email = strings.TrimSpace(rec[at])
		}
		if email == "" {
			continue
		}
		if len(l.Emails) == limit {
			return List{}, tooManyLines(limit)
		}
		if err := storable(email, line); err != nil {
			return List{}, err
		}
		other := make([]string, 0, max(len(rec)-1, 0))
		for i, cell := range rec {
			if i != at {
				other = append(other, cell)
			}
		}
		wide = max(wide, len(rec))
		l.Emails, l.Rows = append(l.Emails, email), append(l.Rows, other)
	}
	// Lines with more cells than the header: their columns get numbers.
	for n := len(l.Columns) + 1; n < wide; n++ {
		l.Columns = append(l.Columns, "column "+strconv.Itoa(n+1))
	}
	for i, row := range l.Rows {
		for len(row) < len(l.Columns) {
			row = append(row, "")
		}
		l.Rows[i] = row
	}
	return l, nil
}

func addressColumn(header []string) int {
	for i, name := range header {
		if addressHeaders[strings.ToLower(strings.TrimSpace(name))] {
			return i
		}
	}
	return 0
}

// storable refuses an address of line n that a store cannot keep (not
// UTF-8, or a NUL: PostgreSQL refuses both) by its line, not as a 500.
func storable(v string, n int) error {
	if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
		return apperr.Field("file", fmt.Sprintf("line %d is not UTF-8 text or has a NUL character: save the list as UTF-8", n))
	}
	return nil
}

func tooManyLines(limit int) error {
	return apperr.Field("file", fmt.Sprintf("at most %d addresses a job", limit))
}
