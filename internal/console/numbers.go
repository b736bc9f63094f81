package console

import (
	"strconv"
)

// num writes a count with thousands separators: 1,234,567.
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// plural writes a count of things: "1 address", "1,200 addresses".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return num(n) + " " + many
}

// anyNum is num for the integer kinds templates hold.
func anyNum(v any) string {
	switch n := v.(type) {
	case int:
		return num(int64(n))
	case int64:
		return num(n)
	case float64:
		return num(int64(n))
	}
	return "?"
}

// badgeClass is the badge a state is shown with: ok for what went well,
// bad for what failed or ended, warn for what is still on its way.
func badgeClass(state string) string {
	switch state {
	case "verified", "delivered":
		return "badge ok"
	case "failed", "bounced", "ended", "cancelled":
		return "badge bad"
	}
	return "badge warn"
}
