// Package inboundroute is the expression language of inbound routes, as
// Mailgun's Routes have it: which received messages a route takes
// (filters) and what it does with them (actions), compiled once and
// evaluated per recipient. It is pure: no database, no network; the
// Service at the end keeps routes through a Store and checks them with
// Compile before they are stored.
//
// # Filters
//
// An expression is one filter or several joined by "and" (any case):
//
//	match_recipient("REGEX")          the SMTP recipient (RCPT TO)
//	match_header("HEADER", "REGEX")   any value of a header of the message
//	catch_all()                       alone: no earlier route matched
//
// Strings are quoted with " or '. Inside one, a backslash before the
// enclosing quote gives the quote; every other backslash is kept as it
// is, for the regular expression ("^chris\+(.*)@" stays as written) or
// the action's capture references (\1). Whitespace (spaces, tabs, line
// breaks) may surround names, parentheses, commas and "and".
//
// Patterns are matched as Python's re.match does, which is what Mailgun
// runs: from the start of the value (add $ to anchor the end too), and
// case-insensitively, since addresses and header names are ((?-i) turns
// that off for the rest of a pattern). Header names are matched as MIME
// header names (case-insensitively); header values are matched after
// RFC 2047 decoding, each on its first MaxHeaderValueBytes bytes, at most
// MaxHeaderValues values of one name; a recipient longer than
// MaxRecipientBytes is taken by no filter (a catch_all() route still
// matches).
//
// The regular expressions are Go's (RE2), not Python's. What differs:
// no backreferences (\1, (?P=name)), no lookahead or lookbehind ((?=,
// (?!, (?<=, (?<!), no atomic groups or possessive quantifiers, no
// conditionals; each is refused with a message naming it. \d, \w, \s and
// \b are ASCII-only (Python's are Unicode). \Z is read as \z, and
// {,n} as {0,n} (RE2 would take them literally). Named groups may be
// written (?P<name>...) or (?<name>...).
//
// RE2 never backtracks, but a match still costs the pattern's size times
// the text's length (times its captures, carried along every thread), and
// an account's routes multiply it: an expression has at most MaxCaptures
// captures, and one evaluation (EvaluateWithin, MatchRecipientWithin)
// counts its work on a Meter, stopping at MaxMatchCost; its caller
// refuses the message rather than act on what was evaluated.
//
// # Actions
//
//	forward("https://app.example/in?box=\1")   post the message to a URL
//	forward("someone@example.org")             re-send it to an address
//	forward("https://a.example/x, b@example.org")  several, comma-separated
//	store()                                    keep it to be read later
//	store(notify="https://app.example/ready")  ... and say so at a URL
//	stop()                                     evaluate no later route
//
// Captures of the filters' patterns are numbered across the whole
// expression, left to right, from \1; named groups are \g<name> (and
// \g<N> is \N); \\ is a backslash. A capture in a URL is percent-encoded
// (every byte but letters, digits and -._~), so it cannot add a query
// parameter, a path segment or a header; a capture may not stand in a
// URL's scheme or host, nor in an address's domain, so that a sender
// cannot choose where mail goes. An address with a capture must still
// be a valid address once filled in, and a URL must stay within
// MaxURLBytes: otherwise that action is skipped, with the reason in
// Action.Skipped, and the others run.
//
// # Evaluation
//
// Routes are evaluated in priority order (lower first; equal priorities
// in the order they were created): every route whose expression matches
// contributes its actions, until a route with stop() has contributed
// its own. catch_all() matches when no earlier route matched the
// recipient. The caller evaluates an account's routes only for
// recipients at the account's own inbound domains: a pattern that names
// another domain never sees its mail.
package inboundroute
