package delivery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/mtasts"
)

// Bounds on one direct-delivery attempt, as Postfix's smtp_mx_address_limit
// does: a domain listing dozens of dead MX hosts must not hold a worker for
// dozens of connect timeouts.
const (
	maxMXHosts = 5 // MX hosts tried, by preference
	maxAddrs   = 4 // addresses tried per host
)

// relayRoute checks a relay route and fills in its defaults.
func relayRoute(r Route) (Route, *Error) {
	r.Host = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(r.Host)), ".")
	if r.TLS == "" {
		r.TLS = TLSStartTLS
	}
	if r.Port == 0 {
		r.Port = map[string]int{TLSImplicit: 465, TLSNone: 25}[r.TLS]
		if r.Port == 0 {
			r.Port = 587
		}
	}
	switch {
	case r.Host == "" || strings.ContainsAny(r.Host, " /:@\r\n") && !isIP(r.Host):
		return r, configError("relay host %q is not a host name or IP address", r.Host)
	case r.Port < 1 || r.Port > 65535:
		return r, configError("relay port %d is not a port", r.Port)
	case r.TLS != TLSNone && r.TLS != TLSStartTLS && r.TLS != TLSImplicit:
		return r, configError("relay TLS mode %q is not none, starttls or tls", r.TLS)
	}
	return r, nil
}

// relayKey names a relay's egress path: its connections are shared only
// by routes with the same host, port, TLS mode and credentials.
func relayKey(r Route) string {
	return "relay\x00" + net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) + "\x00" + r.TLS + "\x00" + r.User + "\x00" + r.Password
}

// target is the next hop host of tk: the relay, or the MX host h with
// the TLS plan for it (an error when the policy excludes h).
func (t *Transport) target(ctx context.Context, tk *Ticket, h string, sts func() *mtasts.Policy) (target, *Error) {
	if tk.route.Mode != ModeDirect {
		tg := target{host: tk.route.Host, port: tk.route.Port, relay: tk.route, dialled: &tk.spent}
		if ip, err := netip.ParseAddr(tg.host); err == nil {
			tg.addrs = []netip.Addr{ip.Unmap()}
		}
		return tg, nil
	}
	tg := target{host: h, port: t.cfg.MXPort, mx: true, local: tk.source.Address, helo: tk.source.EHLODomain,
		dialled: &tk.spent}
	if ip, err := netip.ParseAddr(h); err == nil {
		tg.addrs = []netip.Addr{ip.Unmap()} // an MX naming an IP, against RFC 5321 but seen
	}
	var e *Error
	tg.plan, e = t.planTLS(ctx, tk.domain, h, tk.dt, sts)
	return tg, e
}

// mtaSTS returns domain's MTA-STS policy, nil when it has none or MTA-STS
// is off.
func (t *Transport) mtaSTS(ctx context.Context, domain string, dt DirectTLS) *mtasts.Policy {
	if dt.DisableMTASTS || t.cfg.MTASTS == nil {
		return nil
	}
	p, ok := t.cfg.MTASTS.Policy(ctx, domain)
	if !ok {
		return nil
	}
	return &p
}

// mxHosts returns domain's MX hosts, by preference (ties in the
// resolver's order), and whether they are the implicit MX (RFC 5321 §5.1:
// the domain itself, when it has no MX records). All of them name the
// site; the first maxMXHosts are tried.
func (t *Transport) mxHosts(ctx context.Context, domain string) ([]string, bool, *Error) {
	mxs, err := t.cfg.Resolver.LookupMX(ctx, domain)
	switch {
	case err == nil && dnsclient.IsNullMX(mxs):
		return nil, false, &Error{Enhanced: "5.1.10", Stage: StageDNS,
			Message: fmt.Sprintf("domain %s accepts no mail (null MX, RFC 7505)", domain)}
	case err == nil:
		var hosts []string
		for _, mx := range mxs {
			if mx.Host != "." && mx.Host != "" { // all name the site; maxMXHosts are tried
				hosts = append(hosts, mx.Host)
			}
		}
		if len(hosts) == 0 {
			return nil, false, &Error{Enhanced: "5.1.10", Stage: StageDNS,
				Message: fmt.Sprintf("domain %s has only null MX records", domain)}
		}
		return hosts, false, nil
	case dnsclient.IsNoData(err):
		return []string{domain}, true, nil
	case dnsclient.IsNotFound(err), dnsclient.IsInvalid(err):
		return nil, false, &Error{Enhanced: "5.1.2", Stage: StageDNS, Err: err,
			Message: fmt.Sprintf("domain %s does not exist", domain)}
	}
	return nil, false, dnsError(err, "")
}

// dnsError classifies a failed lookup: temporary (4.4.3) for timeouts and
// server failures and any error not from dnsclient, else permanent 5.4.4
// (unable to route: the name has no addresses).
func dnsError(err error, host string) *Error {
	e := &Error{Enhanced: "4.4.3", Temporary: true, Stage: StageDNS, Host: host, Err: err, Message: err.Error()}
	switch {
	case dnsclient.IsNotFound(err) || dnsclient.IsNoData(err) || dnsclient.IsInvalid(err):
		e.Enhanced, e.Temporary = "5.4.4", false
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		e.Enhanced = "4.4.7"
	}
	return e
}

// configError is a permanent refusal of an invalid Route (5.3.5: system
// incorrectly configured). The domain service validates routes on save, so
// this is a bug or a stale row, and retrying the same route cannot help.
func configError(format string, args ...any) *Error {
	return &Error{Enhanced: "5.3.5", Stage: StageConnect, Message: fmt.Sprintf(format, args...)}
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}
