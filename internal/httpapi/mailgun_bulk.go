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
	"net/url"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/mailgun"
	"github.com/postline/postline/internal/validation"
)

// Mailgun's bulk validation (/v4/address/validate/bulk/...) over the
// list-cleaning jobs: the list_id is the job's name, so one job per name
// and account; DELETE cancels an open job and frees the name. The
// answers are Mailgun's; the results are served by Postline, behind the
// same authentication, as CSV and as JSON.

// maxListID bounds a list_id.
const maxListID = 200

// mailgunJobStatus is Mailgun's status of a job.
func mailgunJobStatus(status string) string {
	switch status {
	case validation.JobQueued:
		return "created"
	case validation.JobRunning:
		return "processing"
	case validation.JobDone:
		return "uploaded"
	}
	return "failed" // failed, or cancelled through Postline's own API
}

// listID is the path's list_id, checked: text a store can keep and a
// header can carry (PostgreSQL refuses NUL and invalid UTF-8).
func listID(r *http.Request) (string, error) {
	id := r.PathValue("list_id")
	if id == "" || len(id) > maxListID || strings.ContainsAny(id, "/?#") || !utf8.ValidString(id) || strings.ContainsFunc(id, unicode.IsControl) {
		return "", apperr.Field("list_id", fmt.Sprintf("A list id is 1 to %d characters of UTF-8 text without control characters.", maxListID))
	}
	return id, nil
}

// namedJob is the caller's job of the path's list_id (Mailgun's 404 for
// any other account's).
func (s *Server) namedJob(r *http.Request, p account.Principal) (validation.Job, error) {
	id, err := listID(r)
	if err != nil {
		return validation.Job{}, err
	}
	j, err := s.Jobs.Named(r.Context(), p.AccountID, id)
	if apperr.CodeOf(err) == apperr.NotFound {
		return j, apperr.Errorf(apperr.NotFound, "List %s not found", id)
	}
	return j, err
}

// handleMailgunBulkCreate is POST /v4/address/validate/bulk/{list_id}:
// the multipart part file, CSV or one address a line.
func (s *Server) handleMailgunBulkCreate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	id, err := listID(r)
	if err != nil {
		return err
	}
	done, err := s.Jobs.Reading(p.AccountID)
	if err != nil {
		return err
	}
	defer done()
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
		return apperr.Field("file", "Upload the list as the multipart/form-data part named file.")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return apperr.Field("body", "The multipart body is malformed.")
	}
	var emails []string
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return tooLargeOr(err, apperr.Field("body", "The multipart body is malformed."))
		}
		if part.FormName() != "file" {
			return apperr.Field(part.FormName(), "Unknown parameter: upload the list as the part named file.")
		}
		if emails, err = ReadAddressList(part, validation.MaxJobLines); err != nil {
			return err
		}
	}
	if len(emails) == 0 {
		return apperr.Field("file", "The list is required: a CSV or text file, one address a line.")
	}
	if _, err := s.Jobs.CreateNamed(r.Context(), p.AccountID, id, emails, false); err != nil {
		if apperr.CodeOf(err) == apperr.Conflict {
			e, _ := apperr.As(err)
			return apperr.Field("list_id", e.Message) // Mailgun answers 400
		}
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "message": "The validation job was submitted."})
	return nil
}

// mailgunJob is a job in Mailgun's shape; summary only once it is done.
func (s *Server) mailgunJob(r *http.Request, j validation.Job) (map[string]any, error) {
	v := map[string]any{"id": j.Name, "created_at": j.CreatedAt.Unix(), "status": mailgunJobStatus(j.Status),
		"quantity": j.Total, "records_processed": j.Done}
	if j.Status != validation.JobDone {
		return v, nil
	}
	sum, err := s.bulkSummary(r, j)
	if err != nil {
		return nil, err
	}
	base := s.publicBase(r) + "/v4/address/validate/bulk/" + url.PathEscape(j.Name)
	v["summary"] = sum
	v["download_url"] = map[string]string{"csv": base + "/results.csv", "json": base + "/results.json"}
	return v, nil
}

// bulkSummaries keeps the summaries of finished jobs, which never change:
// each is one read of the job's results.
type bulkSummaries struct {
	mu sync.Mutex
	m  map[int64]map[string]map[string]int
}

const maxBulkSummaries = 1000

func (s *Server) bulkSummary(r *http.Request, j validation.Job) (map[string]map[string]int, error) {
	s.summaries.mu.Lock()
	sum, ok := s.summaries.m[j.ID]
	s.summaries.mu.Unlock()
	if ok {
		return sum, nil
	}
	sum = map[string]map[string]int{
		"result": {mailgun.ResultDeliverable: 0, mailgun.ResultUndeliverable: 0, mailgun.ResultDoNotSend: 0, mailgun.ResultCatchAll: 0, mailgun.ResultUnknown: 0},
		"risk":   {mailgun.RiskLow: 0, mailgun.RiskMedium: 0, mailgun.RiskHigh: 0, mailgun.RiskUnknown: 0},
	}
	err := s.Jobs.Results(r.Context(), j.AccountID, j.ID, func(it validation.JobItem) error {
		if it.Result == nil {
			return nil
		}
		v := mailgun.FromResult(*it.Result)
		sum["result"][v.Result]++
		sum["risk"][v.Risk]++
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.summaries.mu.Lock()
	if s.summaries.m == nil || len(s.summaries.m) >= maxBulkSummaries {
		s.summaries.m = map[int64]map[string]map[string]int{}
	}
	s.summaries.m[j.ID] = sum
	s.summaries.mu.Unlock()
	return sum, nil
}

// handleMailgunBulkList is GET /v4/address/validate/bulk: the account's
// named jobs among its newest 50, one page (next is an empty one).
func (s *Server) handleMailgunBulkList(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	jobs, err := s.Jobs.List(r.Context(), p.AccountID)
	if err != nil {
		return err
	}
	if r.URL.Query().Get("pivot") != "" {
		jobs = nil // the one page is the first; any page after it is empty
	}
	out := []map[string]any{}
	for _, j := range jobs {
		if j.Name == "" {
			continue
		}
		v, err := s.mailgunJob(r, j)
		if err != nil {
			return err
		}
		out = append(out, v)
	}
	self := s.publicBase(r) + "/v4/address/validate/bulk?limit=100"
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out, "total": len(out),
		"paging": map[string]string{"first": self, "last": self, "next": self + "&pivot=end", "prev": self}})
	return nil
}

// handleMailgunBulkGet is GET /v4/address/validate/bulk/{list_id}.
func (s *Server) handleMailgunBulkGet(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	j, err := s.namedJob(r, p)
	if err != nil {
		return err
	}
	v, err := s.mailgunJob(r, j)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// handleMailgunBulkDelete is DELETE /v4/address/validate/bulk/{list_id}.
func (s *Server) handleMailgunBulkDelete(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	id, err := listID(r)
	if err != nil {
		return err
	}
	if _, err := s.Jobs.DropName(r.Context(), p.AccountID, id); err != nil {
		if apperr.CodeOf(err) == apperr.NotFound {
			return apperr.Errorf(apperr.NotFound, "List %s not found", id)
		}
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "Validation job canceled."})
	return nil
}

// handleMailgunBulkResults is GET .../bulk/{list_id}/results.csv and
// results.json: each address in input order with Mailgun's fields (an
// address not yet validated has result "" in CSV, is left out of JSON).
func (s *Server) handleMailgunBulkResults(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	format := r.PathValue("file")
	if format != "results.csv" && format != "results.json" {
		return apperr.Errorf(apperr.NotFound, "Not Found: %s", r.URL.Path)
	}
	j, err := s.namedJob(r, p)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var cw *csv.Writer
	first := true
	if format == "results.csv" {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", j.Name+".csv"))
		cw = csv.NewWriter(bw)
		cw.Write([]string{"address", "result", "risk", "reason", "is_disposable_address", "is_role_address", "did_you_mean", "root_address"}) //nolint:errcheck // flushed below
	} else {
		w.Header().Set("Content-Type", "application/json")
		bw.WriteString("[") //nolint:errcheck // flushed below
	}
	w.WriteHeader(http.StatusOK)
	err = s.Jobs.Results(r.Context(), p.AccountID, j.ID, func(it validation.JobItem) error {
		if it.Result == nil {
			if cw != nil {
				return cw.Write(validation.SpreadsheetSafe([]string{it.Email, "", "", "", "", "", "", ""}))
			}
			return nil
		}
		v := mailgun.FromResult(*it.Result)
		if cw != nil {
			return cw.Write(validation.SpreadsheetSafe([]string{v.Address, v.Result, v.Risk, strings.Join(v.Reason, " "),
				fmt.Sprint(v.IsDisposableAddress), fmt.Sprint(v.IsRoleAddress), deref(v.DidYouMean), deref(v.RootAddress)}))
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if !first {
			bw.WriteString(",") //nolint:errcheck // flushed below
		}
		first = false
		_, err = bw.Write(b)
		return err
	})
	if cw != nil {
		cw.Flush()
	} else {
		bw.WriteString("]\n") //nolint:errcheck // flushed below
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		s.Logger.Warn("bulk validation results ended early", "job", j.ID, "error", err)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
