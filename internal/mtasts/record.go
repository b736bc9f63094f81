package mtasts

import (
	"errors"
	"strings"
)

// recordPrefix starts every MTA-STS TXT record (RFC 8461 §3.1).
const recordPrefix = "v=STSv1"

// ParseRecord reads the id of an MTA-STS TXT record
// ("v=STSv1; id=20160831085700Z;"). Fields are separated by ";" with
// optional white space; the first must be v=STSv1, id (1 to 32 letters and
// digits) is required, other fields are ignored.
func ParseRecord(txt string) (id string, err error) {
	fields := strings.Split(txt, ";")
	if strings.TrimSpace(fields[0]) != recordPrefix {
		return "", errors.New("mtasts: record does not start with v=STSv1")
	}
	for _, f := range fields[1:] {
		f = strings.Trim(f, " \t")
		if f == "" {
			continue
		}
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return "", errors.New("mtasts: record field without '=': " + f)
		}
		if k == "id" {
			if id != "" {
				return "", errors.New("mtasts: record has two ids")
			}
			if !validID(v) {
				return "", errors.New("mtasts: record id is not 1 to 32 letters and digits: " + v)
			}
			id = v
		}
	}
	if id == "" {
		return "", errors.New("mtasts: record has no id")
	}
	return id, nil
}

// FindRecord picks the MTA-STS record among a name's TXT records: those
// not starting with "v=STSv1" are ignored, and anything but exactly one
// valid record left is an error (§3.1: the domain then has no policy).
func FindRecord(txts []string) (id string, err error) {
	var cands []string
	for _, t := range txts {
		if strings.HasPrefix(t, recordPrefix) {
			cands = append(cands, t)
		}
	}
	switch len(cands) {
	case 0:
		return "", errors.New("mtasts: no v=STSv1 record")
	case 1:
		return ParseRecord(cands[0])
	}
	return "", errors.New("mtasts: more than one v=STSv1 record")
}

func validID(s string) bool {
	if len(s) < 1 || len(s) > 32 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
