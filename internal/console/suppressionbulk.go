package console

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/audit"
	"github.com/postline/postline/internal/suppression"
)

// removeSuppressions removes the entries ticked on a list's page (at most
// a page's worth; ids not of this domain are skipped, as the service does).
func (c *Console) removeSuppressions(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	t := formListType(r)
	var ids []int64
	for _, v := range r.PostForm["id"] {
		if id, err := strconv.ParseInt(v, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	back := "/domains/" + d.Name + "/suppressions?type=" + string(t)
	if len(ids) == 0 {
		c.redirect(w, r, back, flash{Notice: "Nothing was selected: tick the entries to remove first."})
		return nil
	}
	n, err := c.deps.Suppressions.RemoveMany(r.Context(), d.ID, ids)
	if e, ok := apperr.As(err); ok && e.Code == apperr.Invalid {
		return c.renderSuppressions(w, r, s, http.StatusUnprocessableEntity, map[string][]string{"bulk": {e.Message}})
	}
	if err != nil {
		return err
	}
	c.record(r, s, audit.SuppressionsRemoved, fmt.Sprintf("%s: %d from the %s list", d.Name, n, t))
	c.redirect(w, r, back, flash{Notice: fmt.Sprintf("Removed %s from the %s list.", entries(n), t)})
	return nil
}

// clearSuppressions removes every entry of one list, once the list's name
// is typed in the form (a typed confirmation: the button alone could be a
// slip, and the script's confirm dialog may not run).
func (c *Console) clearSuppressions(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	t := formListType(r)
	if r.PostFormValue("confirm") != string(t) {
		return c.renderSuppressions(w, r, s, http.StatusUnprocessableEntity, map[string][]string{"confirm": {
			fmt.Sprintf("Type %s to remove every entry of the %s list; nothing was removed.", t, t)}})
	}
	n, err := c.deps.Suppressions.RemoveAll(r.Context(), d.ID, t, "")
	if err != nil {
		return err
	}
	c.record(r, s, audit.SuppressionsRemoved, fmt.Sprintf("%s: every entry (%d) of the %s list", d.Name, n, t))
	c.redirect(w, r, "/domains/"+d.Name+"/suppressions?type="+string(t),
		flash{Notice: fmt.Sprintf("Removed every entry of the %s list: %s.", t, entries(n))})
	return nil
}

// formListType is the list a form names (the page's), bounce by default.
func formListType(r *http.Request) suppression.Type {
	t := suppression.Type(r.PostFormValue("type"))
	if !t.Valid() {
		t = suppression.Bounce
	}
	return t
}

func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return num(int64(n)) + " entries"
}
