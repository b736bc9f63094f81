package inbound

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/bounce"
	"github.com/postline/postline/internal/connlimit"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/message"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/spool"
	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/tracking"
)

// rcpt is an accepted recipient: the delivery it names and what it is for.
type rcpt struct {
	target      tracking.Target
	unsubscribe bool // a mailto: unsubscribe, not a bounce address
}

type session struct {
	s      *Server
	c      *smtp.Conn
	remote string
	conn   *connlimit.Conn // nil when not from a bounded listener
	from   string
	rcpts  []rcpt
	// inbound are the recipients at inbound domains (inbound.go): never
	// in one transaction with bounce addresses.
	inbound []receiving.Recipient
	// afterData: the one inbound recipient is decided after DATA.
	afterData bool
	// counted: the transaction took its place in the client address's
	// budget (--inbound-per-ip-per-minute).
	counted bool
	// closing: the session was told 421 and is being closed.
	closing bool
}

var (
	// One answer for an address of no domain here, of a domain that does
	// not take mail, and one no route takes: the difference is not told.
	errNoSuchUser = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1},
		Message: "No such recipient here"}
	errTryLater = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0},
		Message: "Temporary local problem, try again later"}
	errNeedRcpt = &smtp.SMTPError{Code: 503, EnhancedCode: smtp.EnhancedCode{5, 5, 1}, Message: "RCPT first"}
	// The spool's budgets, shared by every door (internal/spool): nothing
	// was recorded, and the same report may be sent again.
	errSpoolFull = &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 3, 1}, Message: "Insufficient system storage (spool full: --spool-max-bytes)"}
	errSpoolBusy = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0},
		Message: "Too many large messages being processed at once (--spool-processing-memory); try again shortly"}
	// A bare CR or NUL is how SMTP smuggling hides a second transaction:
	// such a message is not read at all.
	errUnsafeBytes = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 6, 0},
		Message: "Message refused: it contains a bare CR (a CR not followed by LF) or a NUL"}
)

func (ss *session) Reset() {
	ss.from, ss.rcpts, ss.inbound, ss.afterData, ss.counted = "", nil, nil, false, false
}
func (ss *session) Logout() error { return nil }

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.closing {
		return errRateLimited
	}
	ss.Reset()
	ss.from = from // bounces come from the null sender; anything is fine
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if ss.closing {
		return errRateLimited
	}
	local, _, ok := strings.Cut(to, "@")
	if !ok {
		ss.s.count("rcpt_refused")
		return errNoSuchUser
	}
	var id int64
	unsub := false
	if d, ok := sending.ParseVERP(ss.s.cfg.VERPKey, to); ok {
		id = d
	} else if tok, ok := tracking.MailtoToken(ss.s.cfg.Signer, local); ok {
		id, unsub = tok.DeliveryID, true
	} else if ss.s.cfg.Receiver != nil {
		return ss.rcptInbound(to)
	} else {
		ss.s.count("rcpt_refused")
		return errNoSuchUser
	}
	if len(ss.inbound) > 0 {
		return errOwnTransaction
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t, err := ss.s.store.Target(ctx, id)
	if apperr.CodeOf(err) == apperr.NotFound {
		ss.s.count("rcpt_refused")
		return errNoSuchUser // a real address for a delivery since removed
	}
	if err != nil {
		ss.s.cfg.Logger.Error("inbound: looking up delivery", "delivery", id, "error", err)
		return errTryLater
	}
	for _, r := range ss.rcpts {
		if r.target.DeliveryID == id && r.unsubscribe == unsub {
			return nil // the same address twice: one report, not two
		}
	}
	ss.rcpts = append(ss.rcpts, rcpt{target: t, unsubscribe: unsub})
	// A real report is under way: the sender may now take the time RFC
	// 5321 gives between commands. A client that names no delivery of
	// ours stays within the pre-MAIL bound.
	ss.conn.Promote()
	return nil
}

func (ss *session) Data(r io.Reader) error {
	if ss.closing {
		return errRateLimited
	}
	if len(ss.inbound) > 0 {
		return ss.dataInbound(r)
	}
	if len(ss.rcpts) == 0 {
		return errNeedRcpt
	}
	// Within the spool's budgets: unfinished messages cost neither
	// unbounded memory nor unbounded disk, whoever sends them.
	body, raw, err := ss.s.cfg.Spool.ReadAll(context.Background(), r)
	defer body.Close()
	switch {
	case errors.Is(err, spool.ErrFull):
		ss.s.count("spool_full")
		ss.s.cfg.Logger.Warn("inbound: message refused: the spool is full (--spool-max-bytes)", "remote", ss.remote)
		return errSpoolFull
	case errors.Is(err, spool.ErrBusy):
		ss.s.count("spool_busy")
		ss.s.cfg.Logger.Warn("inbound: message refused for now: too many spooled messages being processed (--spool-processing-memory)", "remote", ss.remote)
		return errSpoolBusy
	case errors.Is(err, spool.ErrWrite):
		ss.s.cfg.Logger.Error("inbound: spooling a message", "error", err)
		return errTryLater
	}
	var reports []bounce.Report
	if err == nil {
		reports, err = bounce.Parse(message.NewUnsafeBytesReader(bytes.NewReader(raw)), ss.s.cfg.MaxMessageBytes)
	}
	if errors.Is(err, bounce.ErrTooLarge) || errors.Is(err, smtp.ErrDataTooLarge) {
		ss.s.count("too_large")
		return smtp.ErrDataTooLarge
	}
	if errors.Is(err, message.ErrUnsafeBytes) {
		ss.s.count("unsafe_bytes")
		ss.s.cfg.Logger.Info("inbound: message refused", "remote", ss.remote, "from", ss.from, "reason", err)
		return errUnsafeBytes
	}
	if err != nil {
		return err
	}
	// One transaction for every recipient of the message: a failure answers
	// 451 having recorded nothing, so the sender's retry records it once.
	var marks []tracking.Mark
	var outcomes []string
	for _, rc := range ss.rcpts {
		m, outcome := ss.mark(rc, reports)
		outcomes = append(outcomes, outcome)
		if m != nil {
			marks = append(marks, *m)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ss.s.store.RecordAll(ctx, marks); err != nil {
		ss.s.cfg.Logger.Error("inbound: recording reports", "recipients", len(ss.rcpts), "error", err)
		return errTryLater
	}
	for i, rc := range ss.rcpts {
		ss.s.count(outcomes[i])
		if ss.s.events != nil {
			ss.s.events.Wake(rc.target.DomainID)
		}
	}
	return nil
}

// mark is what a message to one accepted recipient records (nil: nothing)
// and the outcome it counts as.
func (ss *session) mark(rc rcpt, reports []bounce.Report) (*tracking.Mark, string) {
	t, now := rc.target, ss.s.cfg.Now()
	if rc.unsubscribe {
		m := tracking.UnsubscribeMark(t, "mailto", map[string]any{"ip": ss.remote, "from": ss.from}, now)
		return &m, "mailto_unsubscribe"
	}
	rep, ok := pick(t, reports)
	if !ok {
		ss.s.cfg.Logger.Info("inbound: message to a bounce address is not a report; ignored",
			"delivery", t.DeliveryID, "from", ss.from)
		return nil, "not_a_report"
	}
	details := map[string]any{"source": "dsn", "status": rep.Status, "diagnostic_code": rep.DiagnosticCode,
		"remote_mta": rep.RemoteMTA, "reported_recipient": rep.Recipient}
	switch rep.Kind {
	case bounce.KindComplaint:
		m := tracking.UnsubscribeMark(t, "complaint", map[string]any{"feedback_type": rep.FeedbackType, "ip": ss.remote}, now)
		return &m, string(rep.Kind)
	case bounce.KindTemporary:
		details["reason"] = "delayed"
		return &tracking.Mark{DeliveryID: t.DeliveryID, At: now, Entries: entries(t, event.TemporaryFail, now, details)}, string(rep.Kind)
	default: // permanent
		src := "dsn"
		if rep.Status != "" {
			src += ":" + rep.Status
		}
		supp := &suppression.Entry{DomainID: t.DomainID, Type: suppression.Bounce, RecipientType: suppression.Email,
			Recipient: event.Fold(t.Recipient), Source: &src, CreatedAt: now.UTC(),
			Description: suppression.BounceReason(event.Entry{Details: event.NewDetails(details)}.Reply().String())}
		return &tracking.Mark{DeliveryID: t.DeliveryID, At: now, Suppression: supp, Bounced: true,
			Entries: entries(t, event.Bounced, now, details)}, string(rep.Kind)
	}
}

func entries(t tracking.Target, typ event.Type, at time.Time, details map[string]any) func(bool) []event.Entry {
	return func(bool) []event.Entry { return []event.Entry{t.Entry(typ, at, details)} }
}

// pick chooses the report about t's recipient, or the first report when
// none names it: the bounce address already says which delivery it is.
func pick(t tracking.Target, reports []bounce.Report) (bounce.Report, bool) {
	for _, r := range reports {
		if strings.EqualFold(r.Recipient, t.Recipient) && r.Kind != bounce.KindUnknown {
			return r, true
		}
	}
	for _, r := range reports {
		if r.Kind != bounce.KindUnknown {
			return r, true
		}
	}
	return bounce.Report{}, false
}

func (s *Server) count(outcome string) {
	s.messages.WithLabelValues(outcome).Inc()
}
