package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/emailaddr"
	"github.com/postline/postline/internal/sending"
)

// testMessage sends a short message from the domain to the address typed
// on its page: through the same intake as the API's sends (the domain's
// suppressions, size and daily limits, DKIM, the log), tagged "test", and
// counted against the account's request budget for domain endpoints
// (--rate-domain-per-minute), shared with the API. The page it lands on
// is the message's, so the sender watches it go.
func (c *Console) testMessage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	back := "/domains/" + d.Name
	to := strings.TrimSpace(r.PostFormValue("to"))
	if to == "" {
		c.redirect(w, r, back, flash{Notice: "Type the address the test message goes to."})
		return nil
	}
	if wait := c.domainBudget(r, s); wait != "" {
		c.redirect(w, r, back, flash{Notice: "Too many requests for this account's domains; try again in " + wait + "."})
		return nil
	}
	// One bare address: the intake reads "to" as a list ("a@x, b@y",
	// display names), which would make the button a many-recipient send
	// counted as one request, with a name of the sender's choosing.
	if _, err := emailaddr.Parse(to); err != nil {
		c.redirect(w, r, back, flash{Notice: "The test message was not sent: it goes to one address, such as name@example.com, without a name or a list."})
		return nil
	}
	now := c.cfg.Now().UTC()
	acc, err := c.deps.Sending.Accept(r.Context(), d, s.AccountID, sending.Request{
		From: "test@" + d.Name, FromName: "Postline test", To: []string{to}, Tags: "test",
		Subject: "Test message from " + d.Name,
		Text: "This is a test message sent from the Postline console for " + d.Name + " at " +
			now.Format(time.RFC1123Z) + ".\r\n\r\nIf you can read it, mail from " + d.Name + " reaches this mailbox.\r\n",
	})
	if err != nil {
		c.redirect(w, r, back, flash{Notice: "The test message was not sent: " + apperrMessage(err)})
		return nil
	}
	if len(acc.MessageIDs) == 0 {
		c.redirect(w, r, back, flash{Notice: "The test message was not sent: " + to +
			" is on this domain's suppression lists (the log has the failed entry)."})
		return nil
	}
	c.redirect(w, r, back+"/messages/"+url.PathEscape(acc.MessageIDs[0]),
		flash{Notice: "Test message queued for " + to + "; this page shows what happens to it."})
	return nil
}

// domainBudget counts one request against the account's per-minute budget
// for domain endpoints, shared with the API; it returns the wait when the
// budget is spent ("" when the request may run, also when the counters
// cannot be read: as in the API).
func (c *Console) domainBudget(r *http.Request, s *account.Session) string {
	return c.budget(r, s, "domain", c.cfg.DomainPerMinute, time.Minute)
}
