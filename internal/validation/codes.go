package validation

// Reasons: the stable codes of Result.Reason.
const (
	ReasonSyntax         = "syntax"          // not an address, or an RFC warning in strict mode
	ReasonNXDomain       = "nxdomain"        // the domain does not exist
	ReasonNoMailServer   = "no_mail_server"  // no MX and no usable A/AAAA
	ReasonNullMX         = "null_mx"         // RFC 7505: the domain accepts no mail
	ReasonReservedDomain = "reserved_domain" // RFC 2606/6761 name or special-purpose literal
	ReasonDisposable     = "disposable"      // on the shipped disposable-domain list
	ReasonBlocklisted    = "blocklisted"     // on an operator blocklist
	ReasonDNSUnavailable = "dns_unavailable" // temporary DNS failure; never cached
)

// Warnings added by this package, after the RFC warnings of emailaddr
// (whose codes pass through unchanged). None of them invalidates an
// address, in either mode: they are not RFC warnings.
const (
	WarnImplicitMX    = "implicit_mx"     // no MX; mail goes to the A/AAAA host (RFC 5321 §5.1)
	WarnRoleAccount   = "role_account"    // a role mailbox such as postmaster or info
	WarnFreeProvider  = "free_provider"   // a free consumer mailbox provider
	WarnDNSNotChecked = "dns_not_checked" // Offline: DNS was skipped
)
