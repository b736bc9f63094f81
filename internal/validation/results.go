package validation

import (
	"strconv"
	"strings"
)

// resultColumns are a results CSV's own columns, before the list's.
var resultColumns = []string{"email", "status", "reason", "error", "warnings", "spamtrap_score", "suggestion",
	"deliverability", "deliverability_reasons"}

// ResultsHeader is the header of a job's results CSV, the same from the
// API and the console: the result's columns, then the uploaded CSV's
// other columns.
func ResultsHeader(j Job) []string {
	return SpreadsheetSafe(append(append([]string{}, resultColumns...), j.Columns...))
}

// ResultsRow is an item's row of the results CSV, every cell safe to open
// in a spreadsheet (SpreadsheetSafe). An item not validated yet has its
// address and its own cells only.
func ResultsRow(it JobItem) []string {
	row := make([]string, len(resultColumns), len(resultColumns)+len(it.Extra))
	row[0] = it.Email
	if res := it.Result; res != nil {
		errText := ""
		if res.Error != nil {
			errText = *res.Error
		}
		copy(row[1:], []string{Verdict(*res), res.Reason, errText, strings.Join(res.Warnings, " "),
			strconv.FormatFloat(res.SpamtrapScore, 'f', 3, 64), res.Suggestion, res.Deliverability,
			strings.Join(res.DeliverabilityReasons, " ")})
	}
	return SpreadsheetSafe(append(row, it.Extra...))
}
