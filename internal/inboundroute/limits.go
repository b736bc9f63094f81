package inboundroute

// Limits, named in the messages that enforce them. The expression and
// action lengths are Mailgun's ("cannot exceed 4k"), so routes moved from
// Mailgun fit.
const (
	MaxExpressionBytes = 4000
	MaxActionBytes     = 4000
	// MaxFilters bounds the filters joined by "and" in one expression.
	MaxFilters = 10
	// MaxActions bounds a route's actions, each destination of a
	// comma-separated forward counting as one.
	MaxActions = 10
	// MaxProgram bounds one pattern's compiled size in RE2 instructions:
	// matching costs at most that much per byte of the value, for every
	// route of every received message.
	MaxProgram = 3000
	// MaxCaptures bounds the captures of an expression: the actions can
	// refer to \1 .. \99 only, and each capture multiplies what matching
	// a value costs (RE2 carries every capture along each of its threads:
	// 600 "(.*)" made one 16 KiB header value take seconds).
	MaxCaptures = 99
	// MaxURLBytes bounds a forward or notify URL, as written and with its
	// captures filled in (the webhook URLs' bound).
	MaxURLBytes = 2048
	// MaxHeaderValueBytes and MaxHeaderValues bound what match_header
	// reads of a message: the first bytes of each value, the first values
	// of a name.
	MaxHeaderValueBytes = 16 << 10
	MaxHeaderValues     = 100
	// MaxRecipientBytes: a longer recipient is taken by no filter
	// (SMTP's paths are at most 256 bytes).
	MaxRecipientBytes = 1000
	// MaxPerAccount bounds an account's routes.
	MaxPerAccount = 1000
	// MaxDescriptionBytes bounds a route's description.
	MaxDescriptionBytes = 1000
	// MaxPriority is the largest priority (Mailgun's is a 32-bit integer).
	MaxPriority = 1<<31 - 1
)
