package submission

import "github.com/emersion/go-smtp"

// The answers of the submission service, in one table (RFC 6409, RFC 4954,
// RFC 3463). Texts never contain the credentials.
var (
	errAuthRequired   = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required: AUTH PLAIN or LOGIN with your login and an API key"}
	errKeyGone        = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "The API key this session authenticated with no longer works (revoked, expired or its account disabled): connect and authenticate again"}
	errBadCredentials = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}
	errAuthBlocked    = &smtp.SMTPError{Code: 454, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "Too many failed authentication attempts; try again later"}
	errTempFailure    = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Temporary failure storing the message; nothing was accepted, try again"}
	errAuthzID        = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "The authorization identity must be empty or the login: one account cannot act as another"}
	errNoSendScope    = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "This API key lacks the \"send\" scope"}
	errShuttingDown   = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "Service shutting down; try again"}
	// The spool's budgets, shared by every door (internal/spool): nothing
	// was stored, and the same message may be sent again.
	errSpoolFull = &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 3, 1}, Message: "Insufficient system storage (spool full: --spool-max-bytes)"}
	errSpoolBusy = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0},
		Message: "Too many large messages being processed at once (--spool-processing-memory); nothing was accepted, try again shortly"}
)

func notYours(what, domain string) *smtp.SMTPError {
	return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1},
		Message: "The " + what + " domain " + domain + " is not a verified domain of this account"}
}

func rateLimited(retryAfter int) *smtp.SMTPError {
	return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 0},
		Message: "Rate limit reached; retry in " + itoa(retryAfter) + " seconds"}
}

func badMessage(msg string) *smtp.SMTPError {
	return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: msg}
}

func badAddress(msg string) *smtp.SMTPError {
	return &smtp.SMTPError{Code: 553, EnhancedCode: smtp.EnhancedCode{5, 1, 3}, Message: msg}
}

func itoa(n int) string {
	if n <= 0 {
		return "1"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

func tooManySessions(limit int) *smtp.SMTPError {
	return &smtp.SMTPError{Code: 454, EnhancedCode: smtp.EnhancedCode{4, 7, 0},
		Message: "Too many sessions open for this account (at most " + itoa(limit) + " at once); close one and try again"}
}
