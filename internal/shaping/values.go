package shaping

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limit is a count such as connection_limit, written as an integer or as
// "local:N". Local says the limit is per process in KumoMTA's terms; every
// Postline limit is per process anyway except the provider_* ones (see
// doc.go), so only those care. The zero Limit is unset.
type Limit struct {
	N     int
	Local bool
}

// IsSet reports whether a file set the limit.
func (l Limit) IsSet() bool { return l.N > 0 }

// String writes the limit as a shaping file would.
func (l Limit) String() string {
	if l.Local {
		return "local:" + strconv.Itoa(l.N)
	}
	return strconv.Itoa(l.N)
}

// Rate is a throttle such as max_message_rate: Count events per Per,
// written "N/s", "N/min", "N/h", "N/day" (KumoMTA's ThrottleSpec, with its
// "local:" prefix, ",max_burst=N" suffix and "N/5min" period multiples).
// The zero Rate is unset.
type Rate struct {
	Count    int
	Per      time.Duration
	MaxBurst int // 0: unset (a burst of Count)
	Local    bool
}

// IsSet reports whether a file set the rate.
func (r Rate) IsSet() bool { return r.Count > 0 && r.Per > 0 }

// Interval is the time between events at this rate.
func (r Rate) Interval() time.Duration { return r.Per / time.Duration(r.Count) }

// String writes the rate as a shaping file would, with the period in the
// unit that divides it ("100/min", "2/h", "5/90s").
func (r Rate) String() string {
	var b strings.Builder
	if r.Local {
		b.WriteString("local:")
	}
	fmt.Fprintf(&b, "%d/", r.Count)
	switch r.Per {
	case time.Second:
		b.WriteString("s")
	case time.Minute:
		b.WriteString("min")
	case time.Hour:
		b.WriteString("h")
	case 24 * time.Hour:
		b.WriteString("day")
	default:
		fmt.Fprintf(&b, "%ds", int64(r.Per/time.Second))
	}
	if r.MaxBurst > 0 {
		fmt.Fprintf(&b, ",max_burst=%d", r.MaxBurst)
	}
	return b.String()
}

// TLSMode is enable_tls. The zero value is unset: direct delivery then
// keeps its own default (OpportunisticInsecure).
type TLSMode uint8

// The enable_tls values, with KumoMTA's meanings.
const (
	TLSUnset TLSMode = iota
	// TLSOpportunistic: STARTTLS when offered; the certificate must verify.
	TLSOpportunistic
	// TLSOpportunisticInsecure: STARTTLS when offered, any certificate.
	TLSOpportunisticInsecure
	// TLSRequired: STARTTLS must be offered and the certificate verify.
	TLSRequired
	// TLSRequiredInsecure: STARTTLS must be offered, any certificate.
	TLSRequiredInsecure
	// TLSDisabled: never STARTTLS.
	TLSDisabled
)

var tlsNames = [...]string{"", "Opportunistic", "OpportunisticInsecure", "Required", "RequiredInsecure", "Disabled"}

// String is the mode's name in a shaping file ("" when unset).
func (m TLSMode) String() string {
	if int(m) < len(tlsNames) {
		return tlsNames[m]
	}
	return fmt.Sprintf("TLSMode(%d)", m)
}

// Flag is an optional boolean such as enable_dane: unset, true or false.
type Flag uint8

// The Flag values.
const (
	FlagUnset Flag = iota
	FlagTrue
	FlagFalse
)

// Or returns the flag's value, or def when unset.
func (f Flag) Or(def bool) bool {
	switch f {
	case FlagTrue:
		return true
	case FlagFalse:
		return false
	}
	return def
}

// String is "true", "false" or "" (unset).
func (f Flag) String() string {
	switch f {
	case FlagTrue:
		return "true"
	case FlagFalse:
		return "false"
	}
	return ""
}

func flagOf(b bool) Flag {
	if b {
		return FlagTrue
	}
	return FlagFalse
}

// ParseRate parses a rate as KumoMTA writes it: "N/UNIT" with UNIT one of
// s, sec, second, m, min, minute, h, hr, hour, d, day, optionally preceded
// by a multiple ("10/5min"); "local:" before and ",max_burst=N" after are
// allowed; N may use _ or , as thousands separators.
func ParseRate(s string) (Rate, error) {
	var r Rate
	rest, local := strings.CutPrefix(strings.TrimSpace(s), "local:")
	r.Local = local
	if spec, burst, ok := strings.Cut(rest, ",max_burst="); ok {
		n, err := parseCount(burst)
		if err != nil {
			return Rate{}, fmt.Errorf("max_burst: %w", err)
		}
		r.MaxBurst, rest = n, spec
	}
	count, period, ok := strings.Cut(rest, "/")
	if !ok {
		return Rate{}, fmt.Errorf("want a rate such as \"100/s\", \"20/min\", \"500/h\" or \"10000/day\", got %q", s)
	}
	n, err := parseCount(count)
	if err != nil {
		return Rate{}, err
	}
	digits := len(period) - len(strings.TrimLeft(period, "0123456789"))
	scale := 1
	if digits > 0 {
		if scale, err = strconv.Atoi(period[:digits]); err != nil || scale < 1 {
			return Rate{}, fmt.Errorf("bad period multiple in %q", s)
		}
	}
	unit, ok := rateUnits[period[digits:]]
	if !ok {
		return Rate{}, fmt.Errorf("unknown period %q in %q: want s, sec, m, min, minute, h, hr, hour, d or day", period[digits:], s)
	}
	r.Count, r.Per = n, unit*time.Duration(scale)
	return r, nil
}

var rateUnits = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "second": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hour": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour,
}

// parseCount parses a positive whole number, allowing 1_000 and 1,000.
func parseCount(s string) (int, error) {
	clean := strings.NewReplacer("_", "", ",", "").Replace(strings.TrimSpace(s))
	n, err := strconv.Atoi(clean)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("want a whole number of at least 1, got %q", s)
	}
	return n, nil
}

// ParseLimit parses a limit: a positive integer, or "N" or "local:N" as a
// string.
func ParseLimit(v any) (Limit, error) {
	switch v := v.(type) {
	case int64:
		if v < 1 {
			return Limit{}, fmt.Errorf("must be at least 1, got %d", v)
		}
		return Limit{N: int(v)}, nil
	case string:
		rest, local := strings.CutPrefix(strings.TrimSpace(v), "local:")
		n, err := parseCount(rest)
		if err != nil {
			return Limit{}, fmt.Errorf("want N or \"local:N\": %w", err)
		}
		return Limit{N: n, Local: local}, nil
	}
	return Limit{}, fmt.Errorf("want an integer or \"local:N\", got %s", describe(v))
}

// ParseDuration parses a duration as Go writes it ("90m", "1h30m") or as
// KumoMTA's phrases ("1 hour", "2 hours", "30 days", "5 minutes", "1h 30m");
// an integer is seconds. It must be positive.
func ParseDuration(v any) (time.Duration, error) {
	var d time.Duration
	switch v := v.(type) {
	case int64:
		if v > maxSeconds {
			return 0, errTooLong
		}
		d = time.Duration(v) * time.Second
	case string:
		var err error
		if d, err = time.ParseDuration(strings.TrimSpace(v)); err != nil {
			// Go's "invalid duration" for one too long: parsePhrase reads
			// the same units and says which bound it passes.
			if d, err = parsePhrase(v); err != nil {
				return 0, err
			}
		}
	default:
		return 0, fmt.Errorf("want a duration such as \"90m\" or \"2 hours\", got %s", describe(v))
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive, got %v", v)
	}
	return d, nil
}

// phraseUnits are humantime's units, which KumoMTA's durations use.
var phraseUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "nsec": time.Nanosecond,
	"us": time.Microsecond, "usec": time.Microsecond,
	"ms": time.Millisecond, "msec": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

// maxSeconds is the longest duration in whole seconds (about 292 years).
const maxSeconds = math.MaxInt64 / int64(time.Second)

// errTooLong is the error of a duration past the longest a time.Duration
// holds, which would otherwise wrap around to a negative or short one.
var errTooLong = fmt.Errorf("must be at most %s (about 292 years)", FormatDuration(time.Duration(maxSeconds)*time.Second))

var errPhrase = errors.New("want a duration such as \"90m\", \"1h30m\", \"2 hours\" or \"30 days\"")

// parsePhrase parses a sequence of NUMBER UNIT pairs, the space between
// number and unit optional: "2 hours", "1h 30m", "3days".
func parsePhrase(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errPhrase
	}
	var total time.Duration
	for s != "" {
		digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
		if digits == 0 {
			return 0, fmt.Errorf("%w, got %q", errPhrase, s)
		}
		n, err := strconv.ParseInt(s[:digits], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w, got %q", errPhrase, s)
		}
		s = strings.TrimLeft(s[digits:], " ")
		end := len(s) - len(strings.TrimLeft(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"))
		unit, ok := phraseUnits[strings.ToLower(s[:end])]
		if !ok {
			return 0, fmt.Errorf("%w, got unit %q", errPhrase, s[:end])
		}
		if n > (math.MaxInt64-int64(total))/int64(unit) {
			return 0, errTooLong
		}
		total += time.Duration(n) * unit
		s = strings.TrimLeft(s[end:], " ,")
	}
	return total, nil
}

// FormatDuration writes d the way Go parses it, without the zero tails
// ("2h", "1h30m", "90s" rather than "2h0m0s").
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ParseTLSMode parses an enable_tls value (case-insensitive).
func ParseTLSMode(v any) (TLSMode, error) {
	s, ok := v.(string)
	if ok {
		for i, name := range tlsNames[1:] {
			if strings.EqualFold(s, name) {
				return TLSMode(i + 1), nil
			}
		}
	}
	return TLSUnset, fmt.Errorf("want Opportunistic, OpportunisticInsecure, Required, RequiredInsecure or Disabled, got %s", describe(v))
}

// parseInt parses a positive integer, or a string of digits (SetConfig
// values are often quoted).
func parseInt(v any) (int, error) {
	switch v := v.(type) {
	case int64:
		if v >= 1 {
			return int(v), nil
		}
	case string:
		return parseCount(v)
	}
	return 0, fmt.Errorf("want a whole number of at least 1, got %s", describe(v))
}

func parseBool(v any) (bool, error) {
	if b, ok := v.(bool); ok {
		return b, nil
	}
	return false, fmt.Errorf("want true or false, got %s", describe(v))
}

func parseRateValue(v any) (Rate, error) {
	s, ok := v.(string)
	if !ok {
		return Rate{}, fmt.Errorf("want a rate such as \"100/s\" or \"20/min\", got %s", describe(v))
	}
	return ParseRate(s)
}

// describe names a decoded TOML value for messages.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case int64, float64, bool:
		return fmt.Sprint(v)
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}
