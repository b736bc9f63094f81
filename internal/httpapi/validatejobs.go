package httpapi

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

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

// ReadAddressList reads an uploaded list's addresses (validation.ReadList,
// without a CSV's other columns): for Mailgun's bulk validation.
func ReadAddressList(r io.Reader, max int) ([]string, error) {
	l, err := validation.ReadList(r, max)
	return l.Emails, err
}

func (s *Server) handleCreateValidationJob(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	done, err := s.Jobs.Reading(p.AccountID)
	if err != nil {
		return err
	}
	defer done()
	var list validation.List
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
			if list, err = validation.ReadList(part, validation.MaxJobLines); err != nil {
				return err
			}
		}
		if list.Emails == nil {
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
		list.Emails, checkMailbox = in.Emails, in.CheckMailbox
	}
	j, err := s.Jobs.CreateList(r.Context(), p.AccountID, list, checkMailbox)
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
// resultLine is an item's JSON line: the result's own JSON with its
// verdict (status, "pending" before it is validated) and, for an uploaded
// CSV, its other cells by column.
func resultLine(job validation.Job, it validation.JobItem) ([]byte, error) {
	var b []byte
	var err error
	if it.Result == nil {
		b, err = json.Marshal(map[string]any{"email": it.Email, "status": "pending"})
	} else if b, err = json.Marshal(*it.Result); err == nil {
		b = append(b[:len(b)-1], `,"status":"`+validation.Verdict(*it.Result)+`"}`...)
	}
	if err != nil || len(job.Columns) == 0 {
		return append(b, '\n'), err
	}
	cells := map[string]string{}
	for i, name := range job.Columns {
		if i < len(it.Extra) {
			cells[name] = it.Extra[i]
		}
	}
	c, err := json.Marshal(cells)
	return append(append(append(b[:len(b)-1], `,"columns":`...), c...), "}\n"...), err
}

func (s *Server) handleValidationJobResults(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	id, err := s.jobID(r)
	if err != nil {
		return err
	}
	job, err := s.Jobs.Get(r.Context(), p.AccountID, id)
	if err != nil {
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
		cw.Write(validation.ResultsHeader(job)) //nolint:errcheck // flushed below
	}
	w.WriteHeader(http.StatusOK)
	err = s.Jobs.Results(r.Context(), p.AccountID, id, func(it validation.JobItem) error {
		if !ndjson {
			return cw.Write(validation.ResultsRow(it))
		}
		line, err := resultLine(job, it)
		if err == nil {
			_, err = bw.Write(line)
		}
		return err
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
