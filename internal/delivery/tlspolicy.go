package delivery

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/dane"
	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/mtasts"
)

// TLSMode is how direct delivery uses STARTTLS with an MX host: KumoMTA's
// enable_tls values, with their meanings.
type TLSMode string

// The TLS modes of direct delivery.
const (
	// TLSOpportunistic: STARTTLS when offered, and the certificate must
	// verify for the MX host name; no plain-text retry on that host.
	TLSOpportunistic TLSMode = "Opportunistic"
	// TLSOpportunisticInsecure: STARTTLS when offered, any certificate;
	// plain text when not offered or when the handshake fails. The default.
	TLSOpportunisticInsecure TLSMode = "OpportunisticInsecure"
	// TLSRequired: STARTTLS must be offered and the certificate verify.
	TLSRequired TLSMode = "Required"
	// TLSRequiredInsecure: STARTTLS must be offered, any certificate.
	TLSRequiredInsecure TLSMode = "RequiredInsecure"
	// TLSDisabled: never STARTTLS.
	TLSDisabled TLSMode = "Disabled"
)

// DirectTLS is direct delivery's TLS settings for one destination, as
// KumoMTA's enable_tls, enable_mta_sts and enable_dane. The zero value is
// the default: TLSOpportunisticInsecure, MTA-STS and DANE on.
type DirectTLS struct {
	Mode          TLSMode // "" means TLSOpportunisticInsecure
	DisableMTASTS bool    // enable_mta_sts = false
	DisableDANE   bool    // enable_dane = false
}

// Check reports an unknown Mode.
func (d DirectTLS) Check() error {
	switch d.Mode {
	case "", TLSOpportunistic, TLSOpportunisticInsecure, TLSRequired, TLSRequiredInsecure, TLSDisabled:
		return nil
	}
	return fmt.Errorf("delivery: TLS mode %q is not Opportunistic, OpportunisticInsecure, Required, RequiredInsecure or Disabled", d.Mode)
}

// The policies a TLSOutcome names.
const (
	PolicyNone   = "none"    // no MTA-STS or DANE policy applied (relays too)
	PolicyMTASTS = "mta-sts" // the recipient domain's MTA-STS policy (enforce or testing)
	PolicyDANE   = "dane"    // the MX host's DNSSEC-authenticated TLSA records
)

// TLSOutcome is what TLS a session had: the delivery log's details.tls.
type TLSOutcome struct {
	// Version is "TLS1.3", "TLS1.2", ..., or "" for plain text (and for a
	// handshake that failed).
	Version string
	// Verified says the certificate was checked and passed: for the host
	// name against the trust roots, or against the TLSA records (DANE).
	Verified bool
	// Policy is PolicyNone, PolicyMTASTS or PolicyDANE ("" reads as none).
	Policy string
	// Report says what an MTA-STS policy in testing mode would have
	// refused ("" when nothing).
	Report string
}

// Label is the outcome for the postline_deliveries_total{tls} metric:
// "none" (plain text, or no session), "tls" (encrypted, certificate not
// verified), "verified" (verified with no policy: a relay, or
// Opportunistic/Required), "mta-sts" or "dane" (verified under that
// policy).
func (o TLSOutcome) Label() string {
	switch {
	case o.Version == "":
		return "none"
	case !o.Verified:
		return "tls"
	case o.Policy == PolicyMTASTS || o.Policy == PolicyDANE:
		return o.Policy
	}
	return "verified"
}

// TLSLabels are every value Label returns.
var TLSLabels = []string{"none", "tls", "verified", PolicyMTASTS, PolicyDANE}

// MTASTSPolicies finds recipient domains' MTA-STS policies;
// *mtasts.Service satisfies it.
type MTASTSPolicies interface {
	Policy(ctx context.Context, domain string) (mtasts.Policy, bool)
}

// TLSAResolver is the DNS DANE needs; *dnsclient.Resolver satisfies it.
// Without it (a Config.Resolver that lacks these methods) DANE is off.
type TLSAResolver interface {
	LookupTLSA(ctx context.Context, name string) ([]dnsclient.TLSA, bool, error)
	AddrsAuthenticated(ctx context.Context, host string) bool
	MXAuthenticated(ctx context.Context, domain string) bool
}

var _ TLSAResolver = (*dnsclient.Resolver)(nil)

// tlsPlan is how one MX host's session uses TLS.
type tlsPlan struct {
	mode    TLSMode
	policy  string           // PolicyNone, PolicyMTASTS or PolicyDANE
	tlsa    []dnsclient.TLSA // usable records, when policy is DANE
	pkix    bool             // the certificate must verify for the host name
	testing bool             // MTA-STS testing: check and report, never refuse
	domain  string           // the recipient domain (names in messages)
	report  string           // testing: what the policy refuses before connecting
}

// key tells sessions opened under different requirements apart.
func (p tlsPlan) key() string {
	return string(p.mode) + "/" + p.policy + "/" + strconv.FormatBool(p.pkix) + "/" + strconv.FormatBool(p.testing)
}

// requiresTLS says whether a session without STARTTLS is refused.
func (p tlsPlan) requiresTLS() bool { return p.mode == TLSRequired || p.mode == TLSRequiredInsecure }

// plainFallback says whether a failed handshake is retried in plain text.
func (p tlsPlan) plainFallback() bool { return p.mode == TLSOpportunisticInsecure }

// accepts says whether an idle session may carry a message under p: one
// opened under the same requirements, or any when p requires nothing.
func (p tlsPlan) accepts(s *session) bool {
	return s.planKey == p.key() || p.mode == TLSOpportunisticInsecure && p.policy == PolicyNone
}

// name is how messages name what refused: a policy in testing mode never
// does, the TLS mode may.
func (p tlsPlan) name() string {
	switch {
	case p.policy == PolicyMTASTS && !p.testing:
		return fmt.Sprintf("MTA-STS policy of %s (enforce)", p.domain)
	case p.policy == PolicyDANE:
		return "DANE"
	}
	return "TLS mode " + string(p.mode)
}

// testingName names the testing policy in reports.
func (p tlsPlan) testingName() string {
	return fmt.Sprintf("MTA-STS policy of %s (testing)", p.domain)
}

// refuse is the temporary failure of host under p: the cause (a missing
// or misconfigured certificate, a downgrade) may be fixed, and nothing is
// sent meanwhile, so the queue keeps the message.
func (p tlsPlan) refuse(host, enhanced, what string, err error) *Error {
	return &Error{Enhanced: enhanced, Temporary: true, Stage: StageTLS, Host: host, Err: err,
		Message: p.name() + ": " + what, TLS: TLSOutcome{Policy: p.policy}}
}

// planTLS decides how the session to MX host h of domain uses TLS: DANE
// when the domain's MX answer and h's TLSA records are authenticated
// (MTA-STS is then not consulted, RFC 8461 §2), else the domain's MTA-STS
// policy (from policy) if any, else dt.Mode. A host the policy excludes,
// or whose TLSA lookup failed at a signed name, gives an error for that
// host (the next one is tried).
func (t *Transport) planTLS(ctx context.Context, domain, h string, dt DirectTLS, policy func() *mtasts.Policy) (tlsPlan, *Error) {
	p := tlsPlan{mode: cmp.Or(dt.Mode, TLSOpportunisticInsecure), policy: PolicyNone, domain: domain}
	if !dt.DisableDANE && t.tlsa != nil && !isIP(h) && t.tlsa.MXAuthenticated(ctx, domain) {
		name := "_" + strconv.Itoa(t.cfg.MXPort) + "._tcp." + h
		recs, authed, err := t.tlsa.LookupTLSA(ctx, name)
		switch {
		case err == nil && authed && len(recs) > 0:
			p.policy, p.tlsa, p.mode = PolicyDANE, dane.Usable(recs), TLSRequired
			if len(p.tlsa) == 0 {
				p.mode = TLSRequiredInsecure // RFC 7672 §2.2: encrypt, nothing to authenticate with
			}
			return p, nil
		case dnsclient.IsTemporary(err) && ctx.Err() == nil && t.tlsa.AddrsAuthenticated(ctx, h):
			// At a signed host this may be an attacker hiding the records
			// (RFC 7672 §2.2); at an unsigned one, a broken name server.
			return p, &Error{Enhanced: "4.4.3", Temporary: true, Stage: StageDNS, Host: h, Err: err,
				Message: "DANE: the TLSA lookup for " + name + " failed at a DNSSEC-signed host",
				TLS:     TLSOutcome{Policy: PolicyDANE}}
		}
	}
	if sts := policy(); sts != nil && sts.Mode != mtasts.ModeNone {
		p.policy, p.testing = PolicyMTASTS, sts.Mode == mtasts.ModeTesting
		switch {
		case !sts.Matches(h) && p.testing:
			p.report = h + " is not listed in the policy"
		case !sts.Matches(h):
			return p, p.refuse(h, "4.7.5", "MX host "+h+" is not listed in the policy", nil)
		case !p.testing:
			p.mode, p.pkix = TLSRequired, true // RFC 8461 §4.2: a verified certificate for the MX host
		}
	}
	p.pkix = p.pkix || p.mode == TLSOpportunistic || p.mode == TLSRequired
	return p, nil
}

// joinReports joins testing-mode reports.
func joinReports(rs ...string) string {
	var out []string
	for _, r := range rs {
		if r != "" {
			out = append(out, r)
		}
	}
	return strings.Join(out, "; ")
}
