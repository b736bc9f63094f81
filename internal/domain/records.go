package domain

import (
	"context"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/dnsclient"
)

// Record is one DNS record an owner must publish.
type Record struct {
	Purpose  string `json:"purpose"` // spf, dkim, dmarc, tracking, auth_dkim, auth_return_path, inbound_mx
	Type     string `json:"type"`    // TXT, CNAME, MX
	Name     string `json:"name"`
	Value    string `json:"value"`
	Required bool   `json:"required"` // verification fails without it
	Status   string `json:"status,omitempty"`
}

// Record statuses after verification.
const (
	StatusOK       = "ok"
	StatusMissing  = "missing"
	StatusMismatch = "mismatch"
	StatusDNSError = "dns_error"
)

// DKIMRecordValue is the TXT value publishing the domain's DKIM key.
func (d Domain) DKIMRecordValue() string {
	return "v=DKIM1; k=rsa; p=" + d.DKIMPublicKey
}

// Records lists what d's owner must publish. DMARC is recommended, not
// required: receivers accept mail without it, but the big mailbox providers
// rank mail better with it.
func (s *Service) Records(d Domain) []Record {
	recs := []Record{
		{Purpose: "spf", Type: "TXT", Name: d.Name, Value: s.cfg.SPFRecord, Required: true},
		{Purpose: "dkim", Type: "TXT", Name: d.DKIMSelector + "._domainkey." + d.Name, Value: d.DKIMRecordValue(), Required: true},
		{Purpose: "dmarc", Type: "TXT", Name: "_dmarc." + d.Name, Value: "v=DMARC1; p=none"},
	}
	if d.TrackingDomain != "" && s.cfg.PublicHost != "" {
		recs = append(recs, Record{Purpose: "tracking", Type: "CNAME", Name: d.TrackingDomain, Value: s.cfg.PublicHost, Required: true})
	}
	if d.AuthDomain != "" {
		recs = append(recs, Record{Purpose: "auth_dkim", Type: "TXT", Name: d.DKIMSelector + "._domainkey." + d.AuthDomain,
			Value: d.DKIMRecordValue(), Required: true})
		// The return path points at the service host, whose own MX and SPF
		// records then cover the bounce addresses (a CNAME cannot sit beside
		// a TXT at the same name, so this replaces an SPF record there).
		if s.cfg.PublicHost != "" {
			recs = append(recs, Record{Purpose: "auth_return_path", Type: "CNAME", Name: d.AuthDomain, Value: s.cfg.PublicHost, Required: true})
		}
	}
	if d.Inbound && s.cfg.InboundMXHost != "" {
		// Not required: a domain sends without it. It is what brings mail
		// to the inbound listener (its value is "PREFERENCE HOST").
		recs = append(recs, Record{Purpose: "inbound_mx", Type: "MX", Name: d.Name, Value: "10 " + s.cfg.InboundMXHost})
	}
	return recs
}

// Verify looks up every record and marks the domain verified when all
// required ones are in place; otherwise it clears verification. With force,
// the operator marks it verified without looking anything up.
func (s *Service) Verify(ctx context.Context, d Domain, force bool) (Domain, []Record, error) {
	d, err := s.Current(ctx, d)
	if err != nil {
		return d, nil, err
	}
	if err := d.CheckClaim(); err != nil {
		return d, nil, err
	}
	for _, h := range []struct{ host, what string }{{d.Name, "domain"}, {d.TrackingDomain, "tracking host"}, {d.AuthDomain, "authentication host"}} {
		if h.host == "" {
			continue
		}
		if err := s.checkHost(ctx, d.AccountID, h.host, h.what); err != nil {
			return d, nil, err
		}
	}
	recs := s.Records(d)
	ok := true
	if !force {
		if s.resolver == nil {
			return d, nil, apperr.Errorf(apperr.Unavailable, "no DNS resolver configured")
		}
		for i := range recs {
			recs[i].Status = s.check(ctx, recs[i])
			if recs[i].Required && recs[i].Status != StatusOK {
				ok = false
			}
		}
	}
	now := s.cfg.Now().UTC()
	if ok {
		d.VerifiedAt, d.ClaimExpiresAt = &now, nil
		return d, recs, s.store.VerifyDomain(ctx, d, "another account verified "+d.Name+" first")
	}
	// A domain that was verified keeps no expiry when its records go away:
	// it has a log and settings worth keeping, and, unverified, it reserves
	// nothing either.
	d.VerifiedAt = nil
	return d, recs, s.store.VerifyDomain(ctx, d, "")
}

func (s *Service) check(ctx context.Context, r Record) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if r.Type == "MX" {
		mxs, err := s.resolver.LookupMX(ctx, r.Name)
		if err != nil {
			return lookupStatus(err)
		}
		_, host, _ := strings.Cut(r.Value, " ")
		for _, mx := range mxs {
			if strings.EqualFold(mx.Host, host) {
				return StatusOK
			}
		}
		return StatusMismatch
	}
	if r.Type == "CNAME" {
		target, err := s.resolver.LookupCNAME(ctx, r.Name)
		if err != nil {
			return lookupStatus(err)
		}
		if !strings.EqualFold(strings.TrimSuffix(target, "."), r.Value) {
			return StatusMismatch
		}
		return StatusOK
	}
	txts, err := s.resolver.LookupTXT(ctx, r.Name)
	if err != nil {
		return lookupStatus(err)
	}
	status := StatusMissing
	for _, t := range txts {
		switch r.Purpose {
		case "spf":
			if strings.HasPrefix(strings.ToLower(t), "v=spf1") {
				return StatusOK
			}
		case "dmarc":
			if strings.HasPrefix(strings.ToUpper(strings.ReplaceAll(t, " ", "")), "V=DMARC1") {
				return StatusOK
			}
		default: // DKIM: the published key must be ours
			if p, found := dkimKey(t); found {
				if p == strings.TrimPrefix(r.Value, "v=DKIM1; k=rsa; p=") {
					return StatusOK
				}
				status = StatusMismatch
			}
		}
	}
	return status
}

// dkimKey extracts p= from a DKIM TXT record, ignoring white space.
func dkimKey(txt string) (string, bool) {
	for _, tag := range strings.Split(txt, ";") {
		k, v, ok := strings.Cut(tag, "=")
		if ok && strings.TrimSpace(k) == "p" {
			return strings.Join(strings.Fields(v), ""), true
		}
	}
	return "", false
}

func lookupStatus(err error) string {
	if dnsclient.IsNotFound(err) || dnsclient.IsNoData(err) {
		return StatusMissing
	}
	return StatusDNSError
}
