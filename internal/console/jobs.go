package console

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/validation"
)

// uploadList queues a list-cleaning job from an uploaded CSV or text file
// (validation.ReadList, as the API) and shows its page. The upload is bounded
// where the console is mounted (httpapi: 64 MiB, as the API's) and in
// lines here (validation.MaxJobLines); an account with its maximum of
// unfinished jobs is told so (429).
func (c *Console) uploadList(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	done, err := c.deps.Jobs.Reading(s.AccountID)
	if err != nil {
		return c.renderValidation(w, r, s, http.StatusTooManyRequests, err.Error())
	}
	defer done()
	f, _, err := r.FormFile("file")
	if err != nil {
		return c.renderValidation(w, r, s, http.StatusUnprocessableEntity, "Choose a CSV or text file with one address a line.")
	}
	defer f.Close()
	list, err := validation.ReadList(f, validation.MaxJobLines)
	if err == nil {
		var j validation.Job
		if j, err = c.deps.Jobs.CreateList(r.Context(), s.AccountID, list, false); err == nil {
			c.redirect(w, r, "/validation/jobs/"+strconv.FormatInt(j.ID, 10),
				flash{Notice: fmt.Sprintf("List #%d queued: %s to check.", j.ID, plural(int64(j.Total), "address", "addresses"))})
			return nil
		}
	}
	if e, ok := apperr.As(err); ok && e.Code == apperr.Invalid {
		return c.renderValidation(w, r, s, http.StatusUnprocessableEntity, fieldText(e))
	}
	if e, ok := apperr.As(err); ok && e.Code == apperr.RateLimited {
		return c.renderValidation(w, r, s, http.StatusTooManyRequests, e.Message)
	}
	return err
}

func fieldText(e *apperr.Error) string {
	var parts []string
	for _, msgs := range e.Fields {
		parts = append(parts, strings.Join(msgs, "; "))
	}
	if len(parts) == 0 {
		return e.Message
	}
	return strings.Join(parts, "; ")
}

func (c *Console) jobFromPath(r *http.Request, s *account.Session) (validation.Job, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return validation.Job{}, apperr.Errorf(apperr.NotFound, "no job")
	}
	return c.deps.Jobs.Get(r.Context(), s.AccountID, id)
}

// jobPage shows a job's progress (reloading itself while it runs) and the
// download of its results.
func (c *Console) jobPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	j, err := c.jobFromPath(r, s)
	if err != nil {
		return err
	}
	pct := 0
	if j.Total > 0 {
		pct = j.Done * 100 / j.Total
	}
	c.render(w, r, http.StatusOK, "job", view{Title: fmt.Sprintf("List %d", j.ID), Session: s, Data: map[string]any{
		"Job": j, "Percent": pct, "Running": j.Status == validation.JobQueued || j.Status == validation.JobRunning}})
	return nil
}

// jobResults downloads a job's results as CSV, in input order: the API's
// columns (validation.ResultsHeader), every cell safe to open in a
// spreadsheet.
func (c *Console) jobResults(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	j, err := c.jobFromPath(r, s)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="validation-job-%d.csv"`, j.ID))
	cw := csv.NewWriter(w)
	cw.Write(validation.ResultsHeader(j)) //nolint:errcheck // flushed below
	err = c.deps.Jobs.Results(r.Context(), s.AccountID, j.ID, func(it validation.JobItem) error {
		return cw.Write(validation.ResultsRow(it))
	})
	cw.Flush()
	if err != nil {
		c.cfg.Logger.Warn("console: job results ended early", "job", j.ID, "error", err)
	}
	return nil
}
