package mailauth

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"time"

	"blitiri.com.ar/go/spf"
	"github.com/emersion/go-msgauth/dkim"
)

// Result values, as RFC 8601 names them.
const (
	Pass      = "pass"
	Fail      = "fail"
	SoftFail  = "softfail"
	Neutral   = "neutral"
	None      = "none"
	TempError = "temperror"
	PermError = "permerror"
)

// Result is one check's outcome.
type Result struct {
	// Result is Pass, Fail, SoftFail (SPF), Neutral (SPF), None,
	// TempError or PermError.
	Result string `json:"result"`
	// Domain is what was checked: SPF's MAIL FROM domain (the HELO name
	// for the null sender), a DKIM signature's d=, DMARC's From domain.
	Domain string `json:"domain,omitempty"`
	// Scope is which identity SPF checked: "mailfrom", or "helo" for the
	// null sender (RFC 7208 §2.4).
	Scope string `json:"scope,omitempty"`
	// Policy is DMARC's policy for the From domain (none, quarantine,
	// reject; its sp= for a subdomain), "" when it publishes none.
	Policy string `json:"policy,omitempty"`
	// Reason says why, when it is not a plain pass.
	Reason string `json:"reason,omitempty"`
}

// Results are the checks of one received message.
type Results struct {
	SPF Result `json:"spf"`
	// DKIM has a result per signature (at most MaxSignatures), none for
	// an unsigned message.
	DKIM  []Result `json:"dkim"`
	DMARC Result   `json:"dmarc"`
}

// DKIMSummary is Pass when a signature verified, else the first
// signature's result, else None: one word for lists.
func (r Results) DKIMSummary() string {
	for _, d := range r.DKIM {
		if d.Result == Pass {
			return Pass
		}
	}
	if len(r.DKIM) > 0 {
		return r.DKIM[0].Result
	}
	return None
}

// MaxSignatures is how many DKIM signatures of a message are verified; the
// others are left out, so that a message cannot make the server verify
// hundreds.
const MaxSignatures = 8

// Input is what the checks read.
type Input struct {
	RemoteIP netip.Addr
	Helo     string
	// MailFrom is the envelope sender, "" for the null sender.
	MailFrom string
	// Message is the message as received (before any field is added).
	Message []byte
}

// Check runs SPF, DKIM and DMARC on a received message. It does not fail:
// a lookup that cannot complete within ctx is a temperror in the results.
func Check(ctx context.Context, r Resolver, in Input) Results {
	var res Results
	res.SPF = checkSPF(ctx, r, in)
	res.DKIM = checkDKIM(ctx, r, in.Message)
	res.DMARC = checkDMARC(ctx, r, in.Message, res.SPF, res.DKIM)
	return res
}

func checkSPF(ctx context.Context, r Resolver, in Input) Result {
	domain, scope := domainOf(in.MailFrom), "mailfrom"
	if domain == "" {
		domain, scope = strings.ToLower(strings.TrimSuffix(in.Helo, ".")), "helo"
	}
	out := Result{Domain: clip(domain), Scope: scope}
	if !in.RemoteIP.IsValid() {
		out.Result, out.Reason = None, "no client address"
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	got, err := spf.CheckHostWithSender(in.RemoteIP.AsSlice(), in.Helo, in.MailFrom,
		spf.WithContext(ctx), spf.WithResolver(netResolver{r}))
	out.Result = string(got)
	if (got == spf.TempError || got == spf.PermError) && err != nil {
		out.Reason = clip(err.Error()) // the others' errors only name the mechanism that matched
	}
	return out
}

func checkDKIM(ctx context.Context, r Resolver, msg []byte) []Result {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	lookup := func(name string) ([]string, error) { return netResolver{r}.LookupTXT(ctx, name) }
	verifs, err := dkim.VerifyWithOptions(bytes.NewReader(msg), &dkim.VerifyOptions{LookupTXT: lookup, MaxVerifications: MaxSignatures})
	if err != nil && len(verifs) == 0 {
		// The header could not be read at all: no signature to report.
		return []Result{}
	}
	out := make([]Result, 0, len(verifs))
	for _, v := range verifs {
		res := Result{Domain: clip(strings.ToLower(v.Domain)), Result: Pass}
		switch {
		case v.Err == nil:
		case dkim.IsTempFail(v.Err):
			res.Result = TempError
		case dkim.IsPermFail(v.Err):
			res.Result = PermError
		default:
			res.Result = Fail
		}
		if v.Err != nil {
			res.Reason = clip(v.Err.Error())
		}
		out = append(out, res)
	}
	return out
}
