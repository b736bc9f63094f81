package httpapi

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/validation"
)

// maxJobBody bounds a list upload: a million lines of addresses.
const maxJobBody = 64 << 20

type jobJSON struct {
	ID           int64          `json:"id"`
	Status       string         `json:"status"`
	Total        int            `json:"total"`
	Done         int            `json:"done"`
	Progress     float64        `json:"progress"`
	Counts       map[string]int `json:"counts"`
	CheckMailbox bool           `json:"check_mailbox"`
	// Deliverability counts the results by deliverability verdict.
	Deliverability map[string]int `json:"deliverability_counts"`
	WaitingUntil   *string        `json:"waiting_until"`
	CreatedAt      string         `json:"created_at"`
	UpdatedAt      string         `json:"updated_at"`
}

func jobView(j validation.Job) jobJSON {
	v := jobJSON{ID: j.ID, Status: j.Status, Total: j.Total, Done: j.Done,
		Counts:       map[string]int{"valid": j.Valid, "invalid": j.Invalid, "risky": j.Risky},
		CheckMailbox: j.CheckMailbox, Deliverability: j.Deliverability,
		CreatedAt: timeJSON(j.CreatedAt), UpdatedAt: timeJSON(j.UpdatedAt)}
	if j.Total > 0 {
		v.Progress = float64(j.Done) / float64(j.Total)
	}
	if j.WaitingUntil != nil {
		t := timeJSON(*j.WaitingUntil)
		v.WaitingUntil = &t
	}
	return v
}

// ReadAddressList reads an uploaded list: CSV (the first column; a first
// row whose first cell holds no @ is a header) or plain text, one address
// a line; blank lines are skipped. At most max lines; a body cut at its
// byte limit is returned as the *http.MaxBytesError.
func ReadAddressList(r io.Reader, max int) ([]string, error) {
	br := bufio.NewReader(r)
	// Mailgun takes gzip and zip lists; read as text their bytes became a
	// job of garbage lines.
	if magic, _ := br.Peek(4); bytes.HasPrefix(magic, []byte{0x1f, 0x8b}) || bytes.HasPrefix(magic, []byte("PK\x03\x04")) {
		return nil, apperr.Field("file", "The list is compressed (gzip or zip): upload the CSV or text file itself.")
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord, cr.LazyQuotes, cr.ReuseRecord = -1, true, true
	var out []string
	for line := 0; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err // 413 naming the limit, not a malformed line
		}
		if err != nil {
			return nil, apperr.Field("file", fmt.Sprintf("line %d cannot be read as CSV or text: %v", line+1, err))
		}
		v := strings.TrimSpace(rec[0])
		if v == "" || (line == 0 && !strings.Contains(v, "@")) {
			continue
		}
		if len(out) == max {
			return nil, apperr.Field("file", fmt.Sprintf("at most %d addresses a job", max))
		}
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return nil, apperr.Field("file", fmt.Sprintf("line %d is not UTF-8 text or has a NUL character: save the list as UTF-8", line+1))
		}
		out = append(out, strings.Clone(v)) // not the whole line the CSV reader allocated
	}
}

func (s *Server) handleCreateValidationJob(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	done, err := s.Jobs.Reading(p.AccountID)
	if err != nil {
		return err
	}
	defer done()
	var emails []string
	checkMailbox := false
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "multipart/form-data":
		mr, err := r.MultipartReader()
		if err != nil {
			return apperr.Field("body", "The multipart body is malformed.")
		}
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return tooLargeOr(err, apperr.Field("body", "The multipart body is malformed."))
			}
			if part.FormName() == "check_mailbox" {
				v, _ := io.ReadAll(io.LimitReader(part, 16))
				checkMailbox = strings.TrimSpace(string(v)) == "true"
				continue
			}
			if part.FormName() != "file" {
				return apperr.Field(part.FormName(), "Unknown field: upload the list as the part named file (and check_mailbox).")
			}
			if emails, err = ReadAddressList(part, validation.MaxJobLines); err != nil {
				return err
			}
		}
		if emails == nil {
			return apperr.Field("file", "The list is required: a CSV or text file, one address a line.")
		}
	default:
		var in struct {
			Emails       []string `json:"emails"`
			CheckMailbox bool     `json:"check_mailbox"`
		}
		if err := decodeJSON(r, &in); err != nil {
			return err
		}
		emails, checkMailbox = in.Emails, in.CheckMailbox
	}
	j, err := s.Jobs.Create(r.Context(), p.AccountID, emails, checkMailbox)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"success": true,
		"message": fmt.Sprintf("Validation job %d queued for %d address(es).", j.ID, j.Total), "data": jobView(j)})
	return nil
}

func (s *Server) jobID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return 0, apperr.Errorf(apperr.NotFound, "Validation job not found")
	}
	return id, nil
}

func (s *Server) handleListValidationJobs(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	jobs, err := s.Jobs.List(r.Context(), p.AccountID)
	if err != nil {
		return err
	}
	out := make([]jobJSON, len(jobs))
	for i, j := range jobs {
		out[i] = jobView(j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": out})
	return nil
}

func (s *Server) handleGetValidationJob(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	id, err := s.jobID(r)
	if err != nil {
		return err
	}
	j, err := s.Jobs.Get(r.Context(), p.AccountID, id)
	if err != nil {
		return notFoundJob(err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": jobView(j)})
	return nil
}

func (s *Server) handleCancelValidationJob(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	id, err := s.jobID(r)
	if err != nil {
		return err
	}
	j, err := s.Jobs.Cancel(r.Context(), p.AccountID, id)
	if err != nil {
		return notFoundJob(err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": jobView(j)})
	return nil
}

func notFoundJob(err error) error {
	if apperr.CodeOf(err) == apperr.NotFound {
		return apperr.Errorf(apperr.NotFound, "Validation job not found")
	}
	return err
}

// handleValidationJobResults streams the results in input order: CSV, or
// JSON lines when the client accepts application/x-ndjson. Lines not yet
// validated have an empty status (CSV) or "pending" (JSON). CSV cells are
// made safe for spreadsheets (validation.SpreadsheetSafe); JSON lines
// carry the values as they are.
func (s *Server) handleValidationJobResults(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	id, err := s.jobID(r)
	if err != nil {
		return err
	}
	if _, err := s.Jobs.Get(r.Context(), p.AccountID, id); err != nil {
		return notFoundJob(err)
	}
	ndjson := strings.Contains(r.Header.Get("Accept"), "application/x-ndjson")
	bw := bufio.NewWriterSize(w, 64<<10)
	var cw *csv.Writer
	if ndjson {
		w.Header().Set("Content-Type", "application/x-ndjson")
	} else {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="validation-job-%d.csv"`, id))
		cw = csv.NewWriter(bw)
		cw.Write([]string{"email", "status", "reason", "error", "warnings", "spamtrap_score", "suggestion", //nolint:errcheck // flushed below
			"deliverability", "deliverability_reasons"})
	}
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	err = s.Jobs.Results(r.Context(), p.AccountID, id, func(it validation.JobItem) error {
		if ndjson {
			if it.Result == nil {
				return enc.Encode(map[string]any{"email": it.Email, "status": "pending"})
			}
			// The result's own JSON with the verdict added before its end.
			b, err := json.Marshal(*it.Result)
			if err != nil {
				return err
			}
			b = append(b[:len(b)-1], `,"status":"`+validation.Verdict(*it.Result)+`"}`+"\n"...)
			_, err = bw.Write(b)
			return err
		}
		if it.Result == nil {
			return cw.Write(validation.SpreadsheetSafe([]string{it.Email, "", "", "", "", "", "", "", ""}))
		}
		res := *it.Result
		errText := ""
		if res.Error != nil {
			errText = *res.Error
		}
		return cw.Write(validation.SpreadsheetSafe([]string{it.Email, validation.Verdict(res), res.Reason, errText,
			strings.Join(res.Warnings, " "), strconv.FormatFloat(res.SpamtrapScore, 'f', 3, 64), res.Suggestion,
			res.Deliverability, strings.Join(res.DeliverabilityReasons, " ")}))
	})
	if cw != nil {
		cw.Flush()
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		s.Logger.Warn("validation job results ended early", "job", id, "error", err)
	}
	return nil
}
