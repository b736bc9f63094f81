package domain

import (
	"context"
	"strings"
	"time"

	"github.com/postline/postline/internal/dnsclient"
)

// Record is one DNS record an owner must publish.
type Record struct {
	// Purpose is spf, dkim, dkim_ed25519, dmarc, tracking, auth_dkim,
	// auth_dkim_ed25519, auth_return_path or inbound_mx.
	Purpose  string `json:"purpose"`
	Type     string `json:"type"` // TXT, CNAME, MX
	Name     string `json:"name"`
	Value    string `json:"value"`
	Required bool   `json:"required"` // verification fails without it
	Status   string `json:"status,omitempty"`
	// ValueSplit is a TXT value longer than a DNS string's 255 octets
	// written as the quoted strings of at most 255 that a zone file (and
	// some providers' forms) want; empty for shorter values.
	ValueSplit string `json:"value_split,omitempty"`
	// Note says what to do when the value cannot be given whole (a
	// relay's SPF include, a CNAME without --public-url).
	Note string `json:"note,omitempty"`
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
	recs := append([]Record{s.spfRecord(d)}, dkimRecords(d, "dkim", d.Name)...)
	recs = append(recs, Record{Purpose: "dmarc", Type: "TXT", Name: "_dmarc." + d.Name, Value: "v=DMARC1; p=none"})
	if d.TrackingDomain != "" {
		recs = append(recs, s.cnameRecord("tracking", d.TrackingDomain))
	}
	if d.AuthDomain != "" {
		recs = append(recs, dkimRecords(d, "auth_dkim", d.AuthDomain)...)
		// The return path points at the service host, whose own MX and SPF
		// records then cover the bounce addresses (a CNAME cannot sit beside
		// a TXT at the same name, so this replaces an SPF record there).
		recs = append(recs, s.cnameRecord("auth_return_path", d.AuthDomain))
	}
	for i := range recs {
		recs[i].ValueSplit = splitTXT(recs[i])
	}
	if d.Inbound && s.cfg.InboundMXHost != "" {
		// Not required: a domain sends without it. It is what brings mail
		// to the inbound listener (its value is "PREFERENCE HOST").
		recs = append(recs, Record{Purpose: "inbound_mx", Type: "MX", Name: d.Name, Value: "10 " + s.cfg.InboundMXHost})
	}
	return recs
}

// spfRecord is the SPF record: the operator's (--spf-record) for direct
// delivery; for a relay, the relay's include, since its servers send.
func (s *Service) spfRecord(d Domain) Record {
	r := Record{Purpose: "spf", Type: "TXT", Name: d.Name, Value: s.cfg.SPFRecord, Required: true}
	if d.Delivery.Mode != ModeSMTP {
		return r
	}
	if include := relayInclude(d.Delivery.Host); include != "" {
		r.Value = "v=spf1 include:" + include + " ~all"
		r.Note = "Mail from " + d.Name + " leaves through " + d.Delivery.Host + ": include:" + include +
			" authorises its servers. With an SPF record at " + d.Name + " already, add include:" + include + " to it (one SPF record a name)."
		return r
	}
	r.Value = "v=spf1 include:RELAY-SPF-DOMAIN ~all"
	r.Note = "Mail from " + d.Name + " leaves through " + d.Delivery.Host + ": replace RELAY-SPF-DOMAIN with the domain its " +
		"provider gives for SPF (their documentation names the include: to add), or add that include: to the SPF record " +
		d.Name + " has. Verification checks that an SPF record is there."
	return r
}

// relayIncludes are the SPF includes of well-known relays, by the end of
// their SMTP host's name.
var relayIncludes = []struct{ host, include string }{
	{"mailgun.org", "mailgun.org"},
	{"sendgrid.net", "sendgrid.net"},
	{"amazonaws.com", "amazonses.com"},
	{"postmarkapp.com", "spf.mtasv.net"},
	{"sparkpostmail.com", "sparkpostmail.com"},
	{"mandrillapp.com", "spf.mandrillapp.com"},
	{"mailjet.com", "spf.mailjet.com"},
	{"brevo.com", "spf.brevo.com"},
	{"sendinblue.com", "spf.sendinblue.com"},
	{"smtp2go.com", "spf.smtp2go.com"},
	{"gmail.com", "_spf.google.com"},
	{"office365.com", "spf.protection.outlook.com"},
	{"outlook.com", "spf.protection.outlook.com"},
	{"zoho.com", "zoho.com"},
	{"zoho.eu", "zoho.eu"},
	{"fastmail.com", "spf.messagingengine.com"},
}

// relayInclude is the SPF include of a well-known relay host ("" when
// it is not known).
func relayInclude(host string) string {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, r := range relayIncludes {
		if host == r.host || strings.HasSuffix(host, "."+r.host) {
			if r.host == "amazonaws.com" && !strings.HasPrefix(host, "email-smtp.") {
				continue // only SES's SMTP endpoints are Amazon's mail servers
			}
			return r.include
		}
	}
	return ""
}

// cnameRecord points host at this server's public name. Without one
// (--public-url unset, or an IP address) there is nothing a CNAME may
// point at: the record says so instead, and is not required.
func (s *Service) cnameRecord(purpose, host string) Record {
	if s.cfg.PublicHost != "" {
		return Record{Purpose: purpose, Type: "CNAME", Name: host, Value: s.cfg.PublicHost, Required: true}
	}
	return Record{Purpose: purpose, Type: "CNAME", Name: host, Note: "This server has no public host name to point " + host +
		" at: the operator sets --public-url to the name it answers on (https://mail.example.com), and the record is then " +
		"a CNAME to that name (a CNAME cannot point at an IP address)."}
}

// splitTXT writes a TXT value longer than 255 octets as quoted strings
// of at most 255 octets each ("" when it fits in one).
func splitTXT(r Record) string {
	if r.Type != "TXT" || len(r.Value) <= 255 {
		return ""
	}
	var parts []string
	for v := r.Value; v != ""; {
		n := min(len(v), 255)
		parts = append(parts, `"`+strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v[:n])+`"`)
		v = v[n:]
	}
	return strings.Join(parts, " ")
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
		default: // DKIM (RSA or Ed25519): the published key must be ours
			if p, found := dkimKey(t); found {
				if want, _ := dkimKey(r.Value); p == want {
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
