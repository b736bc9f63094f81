package validation

import (
	"strings"

	"github.com/postline/postline/internal/emailaddr"
)

// typoTargets are the well-known domains a suggestion may point to.
var typoTargets = map[string]bool{
	"163.com": true, "aol.com": true, "att.net": true, "btinternet.com": true,
	"comcast.net": true, "free.fr": true, "gmail.com": true, "gmx.com": true,
	"gmx.de": true, "gmx.net": true, "googlemail.com": true, "hotmail.co.uk": true,
	"hotmail.com": true, "icloud.com": true, "libero.it": true, "live.com": true,
	"mail.com": true, "mail.ru": true, "me.com": true, "msn.com": true,
	"orange.fr": true, "outlook.com": true, "proton.me": true, "protonmail.com": true,
	"qq.com": true, "sbcglobal.net": true, "t-online.de": true, "verizon.net": true,
	"web.de": true, "yahoo.co.uk": true, "yahoo.com": true, "yandex.ru": true,
	"ymail.com": true,
}

// tldTypos maps top-level labels that do not exist to the one meant.
var tldTypos = map[string]string{
	"cim": "com", "cmo": "com", "comm": "com", "con": "com", "conm": "com",
	"coom": "com", "cpm": "com", "ocm": "com", "vom": "com", "xom": "com",
	"ner": "net", "nett": "net", "nte": "net",
	"ogr": "org", "orgg": "org", "rog": "org",
}

// suggest returns the address a was probably meant to be, or "".
//
// Guards against suggesting for real domains: free-provider domains are
// never corrected; a provider whose first label has at most 3 letters
// (aol, gmx, msn, qq) is reached only by a TLD fix; distance 1 is allowed
// for first labels up to 5 letters (yahoo, gmail), 2 beyond (hotmail,
// outlook); and two providers equally close give no suggestion.
func suggest(a emailaddr.Address) string {
	d := a.ASCIIDomain
	if len(d) < 4 || len(d) > 64 || isFreeProvider(d) {
		return ""
	}
	fixed := d
	if i := strings.LastIndexByte(d, '.'); i > 0 {
		if tld, ok := tldTypos[d[i+1:]]; ok {
			fixed = d[:i+1] + tld
		}
	}
	best := fixed
	if !typoTargets[fixed] {
		if p := closestTarget(fixed); p != "" {
			best = p
		}
	}
	if best == d {
		return ""
	}
	return emailaddr.Address{Local: a.Local, ASCIIDomain: best}.Normalized()
}

// typoCandidates are the typo targets reachable by edit distance, each
// with its allowed distance (see suggest); built once from typoTargets.
var typoCandidates = func() []typoCandidate {
	var cs []typoCandidate
	for t := range typoTargets {
		first, _, _ := strings.Cut(t, ".")
		switch {
		case len(first) <= 3:
		case len(first) <= 5:
			cs = append(cs, typoCandidate{t, 1})
		default:
			cs = append(cs, typoCandidate{t, 2})
		}
	}
	return cs
}()

type typoCandidate struct {
	domain string
	limit  int
}

// closestTarget returns the unique typo target nearest to d within the
// allowed distance, or "".
func closestTarget(d string) string {
	best, bestDist, tie := "", 3, false
	for _, c := range typoCandidates {
		if abs(len(d)-len(c.domain)) > c.limit {
			continue
		}
		dist := damerau(d, c.domain, c.limit)
		switch {
		case dist > c.limit || dist > bestDist:
		case dist == bestDist:
			tie = true
		default:
			best, bestDist, tie = c.domain, dist, false
		}
	}
	if tie {
		return ""
	}
	return best
}

// damerau is the optimal-string-alignment Damerau-Levenshtein distance
// between a and b (bytes): insertions, deletions, substitutions and
// transpositions of adjacent bytes each cost 1, capped at limit+1. It
// stops early once every cell of a row exceeds limit (row minima never
// decrease). Rows live on the stack when b is short, as typo targets are.
func damerau(a, b string, limit int) int {
	var buf [3][32]int
	var prev2, prev, cur []int
	if len(b) < len(buf[0]) {
		prev2, prev, cur = buf[0][:len(b)+1], buf[1][:len(b)+1], buf[2][:len(b)+1]
	} else {
		prev2, prev, cur = make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	}
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], limit+1)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
