package submission

import (
	"context"
	"errors"

	"github.com/emersion/go-smtp"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/sending"
)

// senders is what the sender rules check a message's From, Sender and
// Resent-* addresses against: the domains read at AUTH (the account's,
// within the key's domain limit).
func (ss *session) senders(context.Context) ([]domain.Domain, error) { return ss.domains, nil }

// refuse turns the intake's refusal of a message into the reply: the
// sender rules are a policy refusal (550 5.7.1), bare CR or NUL is
// 550 5.6.0, another unusable message 554 5.6.0; anything else is the
// server's fault (451, logged).
func (ss *session) refuse(err error) error {
	e, ok := apperr.As(err)
	if !ok || (e.Code != apperr.Invalid && e.Code != apperr.Unprocessable) {
		ss.s.messages.WithLabelValues("temporary_failure").Inc()
		ss.s.cfg.Logger.Error("submission: preparing a message failed", "login", ss.principal.Login, "error", err)
		return errTempFailure
	}
	ss.s.messages.WithLabelValues("refused").Inc()
	reason := e.Message
	if m := e.Fields["message"]; len(m) > 0 {
		reason = m[0]
	}
	ss.s.cfg.Logger.Info("submission: refused", "login", ss.principal.Login, "remote", ss.remote, "reason", reason)
	switch {
	case errors.Is(err, sending.ErrSenderHeader):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: reason}
	case errors.Is(err, sending.ErrUnsafeBytes):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: reason}
	}
	return badMessage(reason)
}
