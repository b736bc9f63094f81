// Package logexport writes a domain's filtered delivery log as a file to
// download, CSV or NDJSON, for the console (GET /domains/{name}/log/export)
// and the API (GET /api/domains/{domain}/log/export) alike.
//
// # Contract
//
//   - An export holds the entries that existed when it started and match
//     the filter, oldest first in id order (the order they were
//     recorded). It reads the log through event.Stream: keyset pages of at
//     most event.MaxBatch entries, never OFFSET, never the whole result in
//     memory; each page is written and flushed before the next is read, so
//     memory does not grow with the export's size and the first rows
//     arrive while the last are still unread.
//   - NDJSON lines are the API's log entry objects. CSV has a header row
//     and the columns in Columns; every cell a spreadsheet would read as a
//     formula is prefixed with a quote (validation.SpreadsheetSafe), as the
//     console's other CSV downloads are.
//   - Bounds: at most Config.PerAccount exports of one account run at once
//     in a process (--log-exports-per-account); the next is refused with
//     apperr.RateLimited naming the limit. Each page's writes must finish
//     within WriteTimeout: a client that stops reading is dropped.
//   - Errors before the first byte (the limit, the opening reads) are
//     returned for the caller to answer with a status. After it, a failure
//     aborts the response (http.ErrAbortHandler), so a client sees the
//     body cut short and never takes a truncated file for a whole one.
//
// This package sits beside the two doors (console, httpapi) it serves: it
// knows HTTP responses, and nothing of routes, sessions or keys.
package logexport
