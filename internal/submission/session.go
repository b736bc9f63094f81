package submission

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/connlimit"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/ratelimit"
	"github.com/postline/postline/internal/sending"
)

// session is one SMTP connection's state.
type session struct {
	s         *Server
	remote    string
	tls       bool
	conn      *connlimit.Conn // nil when not from a bounded listener
	principal *account.Principal
	login     string // with key, what AUTH checked: checked again at each MAIL and DATA
	key       string
	held      bool   // counted against the account's sessions
	outcome   string // counted at Logout
	domains   []domain.Domain
	from      string
	rcpts     []string
}

var _ smtp.AuthSession = (*session)(nil)

// opTimeout bounds the database work of one command.
const opTimeout = 30 * time.Second

func (ss *session) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// AuthMechanisms implements smtp.AuthSession; go-smtp offers them only
// after TLS unless the server allows insecure AUTH.
func (ss *session) AuthMechanisms() []string { return []string{sasl.Plain, sasl.Login} }

// Auth implements smtp.AuthSession.
func (ss *session) Auth(mech string) (sasl.Server, error) {
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(identity, username, password string) error {
			if identity != "" && identity != username {
				ss.outcome = "auth_failed"
				return errAuthzID // no account may act for another; refused before anything is checked
			}
			return ss.authenticate(username, password)
		}), nil
	case sasl.Login:
		return &loginServer{authenticate: ss.authenticate}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

// authenticate checks login and API key like the API's Basic auth, after
// the attempt limits: the attempt is counted before the key is checked, so
// parallel guesses cannot overrun them, and a blocked address is not
// checked at all, so a correct guess past the limit teaches nothing. Only
// the client's address is counted, not the login: an API key (256 random
// bits) cannot be guessed, so a lock-out per login would protect nothing
// and let anyone lock a tenant out of SMTP by naming its login.
func (ss *session) authenticate(login, key string) error {
	ctx, cancel := ss.ctx()
	defer cancel()
	log := ss.s.cfg.Logger.With("remote", ss.remote, "login", login)
	var at ratelimit.Attempt
	if a := ss.s.deps.Attempts; a != nil {
		var err error
		if at, err = a.Begin(ctx, "", ss.remote); err != nil {
			log.Warn("submission: AUTH attempts could not be counted", "error", err)
		}
		if at.Blocked {
			ss.outcome = "auth_blocked"
			log.Warn("submission: AUTH refused: too many failures")
			return errAuthBlocked
		}
	}
	p, err := ss.s.deps.Accounts.Authenticate(ctx, login, key)
	switch apperr.CodeOf(err) {
	case "":
		at.Succeeded(ctx) //nolint:errcheck // authenticated either way
	case apperr.Unauthorized, apperr.AuthMissing:
		at.Failed()
		ss.outcome = "auth_failed" // counted by Begin
		log.Info("submission: AUTH failed", "reason", apperr.CodeOf(err))
		return errBadCredentials
	default:
		at.Uncounted(ctx) //nolint:errcheck // nothing was checked
		log.Error("submission: AUTH could not be checked", "error", err)
		return errTempFailure
	}
	if !p.Can(account.ScopeSend) {
		ss.outcome = "auth_failed"
		log.Info("submission: AUTH refused: the key lacks the send scope")
		return errNoSendScope
	}
	all, err := ss.s.deps.Domains.List(ctx, p.AccountID)
	if err != nil {
		log.Error("submission: reading the account's domains", "error", err)
		return errTempFailure
	}
	var doms []domain.Domain // a key limited to some domains sends from those only
	for _, d := range all {
		if p.DomainAllowed(d.Name) {
			doms = append(doms, d)
		}
	}
	if !ss.s.hold(p.AccountID) {
		ss.outcome = "session_limit"
		log.Warn("submission: AUTH refused: the account holds its most sessions", "limit", ss.s.cfg.SessionsPerAccount)
		return tooManySessions(ss.s.cfg.SessionsPerAccount)
	}
	ss.principal, ss.domains, ss.outcome, ss.held = &p, doms, "authenticated", true
	ss.login, ss.key = login, key
	ss.conn.Promote()
	return nil
}

// stillValid checks the session's key again (through the key cache, as
// the API does at each request): a key revoked (its member removed from
// the team, say), expired or of a disabled account since AUTH sends no
// more on a session kept open; the client connects and authenticates again.
func (ss *session) stillValid() error {
	ctx, cancel := ss.ctx()
	defer cancel()
	_, err := ss.s.deps.Accounts.Authenticate(ctx, ss.login, ss.key)
	switch apperr.CodeOf(err) {
	case "":
		return nil
	case apperr.Unauthorized, apperr.AuthMissing:
		ss.s.cfg.Logger.Info("submission: the session's key no longer works", "login", ss.login, "remote", ss.remote)
		if ss.held {
			ss.s.release(ss.principal.AccountID)
			ss.held = false
		}
		ss.principal, ss.domains, ss.key = nil, nil, ""
		return errKeyGone
	}
	ss.s.cfg.Logger.Error("submission: the session's key could not be checked", "error", err)
	return errTempFailure
}

// owned returns the account's verified domain for an address's domain
// (the domain itself or its authentication domain), and that name.
func (ss *session) owned(addr string) (domain.Domain, string, bool) {
	d, ok := sending.OwnerOf(ss.domains, addr)
	name := addr
	if at := strings.LastIndexByte(addr, '@'); at >= 0 {
		name = strings.ToLower(strings.TrimSuffix(addr[at+1:], "."))
	}
	return d, name, ok
}

// Mail implements smtp.Session.
func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.principal == nil {
		return errAuthRequired
	}
	if err := ss.stillValid(); err != nil {
		return err
	}
	if _, name, ok := ss.owned(from); !ok {
		ss.refused("sender", name)
		return notYours("sender", name)
	}
	ss.from = from
	return nil
}

// Rcpt implements smtp.Session (go-smtp answers 452 4.5.3 past
// MaxRecipients).
func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if ss.principal == nil {
		return errAuthRequired
	}
	if !strings.Contains(to, "@") {
		return badAddress("The recipient " + to + " is not an email address")
	}
	ss.rcpts = append(ss.rcpts, to)
	return nil
}

func (ss *session) refused(what, name string) {
	ss.s.messages.WithLabelValues("refused").Inc()
	ss.s.cfg.Logger.Info("submission: refused", "login", ss.principal.Login, "remote", ss.remote,
		"reason", what+" domain "+name+" not a verified domain of the account")
}

// Data implements smtp.Session: 250 is answered only after the message and
// its deliveries are committed.
func (ss *session) Data(r io.Reader) error {
	if ss.principal == nil {
		return errAuthRequired
	}
	if err := ss.stillValid(); err != nil {
		return err
	}
	body, raw, err := ss.s.receive(r)
	if err != nil {
		return err
	}
	defer body.Close()
	ctx, cancel := ss.ctx()
	defer cancel()
	p, err := ss.s.deps.Intake.PrepareRaw(ctx, sending.RawInput{Data: raw, Senders: ss.senders})
	if err != nil {
		return ss.refuse(err)
	}
	d := p.Domain
	if lim := ss.s.deps.Limiter; lim != nil && ss.s.cfg.DomainPerMinute > 0 {
		res, err := lim.Allow(ctx, "domain:"+itoa(int(ss.principal.AccountID)), ss.s.cfg.DomainPerMinute, time.Minute)
		if err == nil && !res.Allowed {
			ss.s.messages.WithLabelValues("rate_limited").Inc()
			return rateLimited(res.RetryAfter(lim.Now()))
		}
	}
	var acc sending.Accepted
	if p.Template != "" {
		// A stored template replaces the submitted body, as the API's
		// template field replaces subject, text and html: one message per
		// envelope recipient, each with its own Message-ID.
		acc, err = ss.s.deps.Intake.Accept(ctx, d, ss.principal.AccountID, sending.Request{From: p.From[0], FromName: p.FromName,
			To: ss.rcpts, Template: p.Template, TemplateVersion: p.TemplateVersion, Variables: p.Variables,
			DeliverAt: p.DeliverAt, Tags: strings.Join(p.Tags, ",")})
	} else {
		acc, err = ss.s.deps.Intake.AcceptRaw(ctx, d, ss.principal.AccountID, sending.RawMessage{From: ss.from,
			Recipients: ss.rcpts, Data: p.Data, MessageID: p.MessageID, Subject: p.Subject, Tags: strings.Join(p.Tags, ","),
			HTML: p.HTML, Track: p.Track, DeliverAt: p.DeliverAt})
	}
	switch code := apperr.CodeOf(err); {
	case err == nil:
	case code == apperr.Invalid || code == apperr.Unprocessable:
		ss.s.messages.WithLabelValues("refused").Inc()
		var ae *apperr.Error
		if errors.As(err, &ae) {
			return badMessage(ae.Message + fieldText(ae))
		}
		return badMessage(err.Error())
	default:
		ss.s.messages.WithLabelValues("temporary_failure").Inc()
		ss.s.cfg.Logger.Error("submission: storing a message failed", "login", ss.principal.Login, "error", err)
		return errTempFailure
	}
	ss.s.messages.WithLabelValues("accepted").Inc()
	ss.s.cfg.Logger.Info("submission: accepted", "login", ss.principal.Login, "domain", d.Name,
		"message_id", p.MessageID, "queued", acc.Queued, "suppressed", acc.Suppressed)
	return nil
}

func fieldText(e *apperr.Error) string {
	var parts []string
	for f, msgs := range e.Fields {
		parts = append(parts, f+": "+strings.Join(msgs, "; "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// Reset implements smtp.Session.
func (ss *session) Reset() { ss.from, ss.rcpts = "", nil }

// Logout implements smtp.Session.
func (ss *session) Logout() error {
	outcome := ss.outcome
	if outcome == "" {
		outcome = "unauthenticated"
	}
	ss.s.sessions.WithLabelValues(outcome).Inc()
	if ss.held {
		ss.s.release(ss.principal.AccountID)
		ss.held = false
	}
	return nil
}
