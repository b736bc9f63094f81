package validation

// SpreadsheetSafe prefixes with a single quote each cell that a
// spreadsheet would read as a formula: one beginning with =, +, -, @, a tab
// or a carriage return (OWASP's "CSV injection" advice). An uploaded list
// is the tenant's, but its results are opened by whoever they are shared
// with, and a line such as =HYPERLINK(...) must come back as text. For CSV
// only: JSON lines carry the values as they are. It changes rec in place
// and returns it.
func SpreadsheetSafe(rec []string) []string {
	for i, c := range rec {
		if c == "" {
			continue
		}
		switch c[0] {
		case '=', '+', '-', '@', '\t', '\r':
			rec[i] = "'" + c
		}
	}
	return rec
}
