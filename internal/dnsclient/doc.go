// Package dnsclient is the resolver behind every DNS question Postline asks:
// address validation (does the domain exist, does it take mail, null MX),
// direct-to-MX delivery (which hosts, in which order, at which addresses),
// and sending-domain verification (SPF, DKIM, DMARC TXT records, tracking
// CNAMEs).
//
// Why one resolver, and why not net.Resolver: validation and delivery must
// agree. If validation decided "no MX, domain exists" from one cache and
// delivery "NXDOMAIN" from another, the same address would be accepted and
// then hard-bounced. Both therefore share this package's classification and
// cache, and the classification needs the exact rcode, which the standard
// library folds into DNSError flags:
//
//   - NotFound: NXDOMAIN, the domain does not exist (permanent).
//   - NoData: the name exists but has no record of that type (permanent);
//     for MX this is where RFC 5321 §5.1 falls back to A/AAAA.
//   - Temporary: timeout, network error, SERVFAIL, REFUSED or any other
//     error rcode. Never treated as a verdict on the address.
//   - Invalid: a name that cannot be asked (bad label, too long).
//
// Every error from a lookup is an *Error carrying its Kind and rcode.
//
// Names may be given in Unicode or ASCII, any case, with or without the
// trailing dot; they are converted with the UTS #46 lookup rules (as
// idna.Lookup, but allowing the underscore labels of _dmarc and _domainkey
// names) and lowercased, and that form is the cache key.
//
// Queries go over UDP with EDNS0 (1232 bytes) and are retried over TCP when
// truncated. Answers are cached per (name, type) in a bounded LRU for the
// smallest TTL of the answer (1 s to 1 h); NXDOMAIN and NoData for the SOA's
// negative TTL (1 s to 5 min, RFC 2308); Temporary failures never. Identical
// lookups in flight at the same time share one query.
//
// Queries set the AD bit, asking the resolver to say whether it validated
// the answer with DNSSEC (RFC 6840 §5.7); the bit is cached with the
// answer. LookupTLSA reports it, for DANE (RFC 7672), which trusts TLSA
// records only when the resolver authenticated them: the configured
// server must then be a validating resolver on a trusted path (on the
// same host, typically), since nothing protects the bit on the way.
package dnsclient
