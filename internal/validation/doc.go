// Package validation decides whether an email address can receive mail:
// the pipeline behind the validate endpoints and `postline validate`. It
// does no HTTP and no SQL; the shared cache and the operator lists are
// interfaces (Cache, Lists, BounceHistory) implemented by adapters.
//
// # Pipeline
//
// The input is used as given (the caller trims it if it wants to). Each
// address goes through these stages; the first failure is the
// verdict (Result.Reason), and every verdict is a Result, never an error.
//
//  1. Syntax (emailaddr.Parse): not an address → syntax. Inputs over 1024
//     bytes are refused before parsing. Standard mode keeps the RFC
//     warnings and stays valid; strict mode fails with syntax on any RFC
//     warning (the error names them) or beyond 254 characters.
//  2. Domain literals ([1.2.3.4], [IPv6:...]) are never looked up: one
//     in special-purpose space (loopback, private, link-local, multicast,
//     documentation, RFC 6890) → reserved_domain; any other is valid in
//     standard mode with the warning domain_literal (strict mode has
//     already refused it). General literals are judged by warnings only.
//  3. Reserved names, without DNS → reserved_domain: the TLDs .test,
//     .example, .invalid, .localhost (RFC 2606, 6761), .local (RFC 6762),
//     .onion (RFC 7686), .alt (RFC 9476), .internal; example.com/.net/.org
//     and home.arpa with their subdomains; the single labels localhost,
//     localdomain, local, internal, intranet, lan, home, corp, private,
//     workgroup.
//  4. Lists, without DNS. An operator allow-listed address or domain
//     (the domain or any parent) skips this stage. Else an operator
//     blocklisted address or domain (or parent) → blocklisted; a domain
//     any of whose suffixes is on the shipped disposable list
//     (data/disposable-domains.txt, see data/README.md) → disposable.
//  5. Cache: LRU, then Cache (see below).
//  6. DNS (dnsclient, bounded by Config.LookupTimeout): MX present → ok;
//     null MX (RFC 7505) → null_mx; no MX (NoData) → A/AAAA: a usable
//     address (not loopback or unspecified) → ok with warning implicit_mx,
//     none → no_mail_server; NXDOMAIN → nxdomain; timeout, SERVFAIL or any
//     other temporary failure → dns_unavailable. Offline skips this stage
//     and adds dns_not_checked instead.
//  7. Annotations and score (every verdict, invalid ones included):
//     role_account and free_provider warnings, Suggestion, spamtrap score.
//
// The stages run cheapest first, so lists come before DNS (the order of
// the API document is syntax, DNS, blocklists): an address that is both
// disposable and NXDOMAIN is reported disposable, and costs no query.
//
// # Warnings
//
// RFC warnings, from emailaddr and invalid in strict mode: quoted_string,
// comment, cfws_near_at, folding_white_space, domain_literal,
// non_address_literal, obsolete_syntax, local_part_too_long,
// address_too_long, dotless_domain, numeric_tld. Then this package's,
// which never invalidate, not even in strict mode (strict means "RFC
// validation with no warnings", and these are not RFC findings):
// implicit_mx, role_account (admin, postmaster, abuse, noreply, info,
// support, sales, webmaster, hostmaster ...; case, "+tag" and . - _
// ignored), free_provider (gmail.com, yahoo.*, outlook.*, hotmail.*,
// icloud.com, aol.com, gmx.*, mail.ru, yandex.*, proton.me ...),
// dns_not_checked (Offline). Warnings come in that order.
//
// # Reasons
//
// syntax, nxdomain, no_mail_server, null_mx, reserved_domain, disposable,
// blocklisted, dns_unavailable (the Reason* constants). Error carries a
// human-readable message; both are empty/nil when the address is valid.
//
// # Suggestion
//
// The domain (after fixing a top-level label that does not exist, such as
// .con, .cmo, .nte, .ogr) is compared with well-known provider domains by
// optimal-string-alignment Damerau-Levenshtein distance: at most 1 for
// first labels up to 5 letters, 2 beyond, none for labels of 3 letters or
// fewer (TLD fixes only), no suggestion on a tie, never for a domain that
// is itself a free provider. Suggestion is the whole corrected address
// (gmial.com → jane@gmail.com). It never changes IsValid.
//
// # Deliverability
//
// Every result also carries deliverability (deliverable, undeliverable,
// risky, unknown) and deliverability_reasons; is_valid and the other
// fields keep their meaning. From the checks:
//
//	check                         verdict        reason
//	syntax                        undeliverable  invalid_syntax
//	nxdomain                      undeliverable  domain_not_found
//	null_mx, no_mail_server       undeliverable  no_mail_server
//	reserved_domain               undeliverable  reserved_domain
//	blocklisted                   undeliverable  blocklisted
//	disposable                    risky          disposable
//	dns_unavailable               unknown        dns_unavailable
//	valid                         deliverable    (none)
//	valid, role_account warning   risky          role_account (added)
//	valid, is_spamtrap            risky          spamtrap_risk (added)
//
// With a mailbox probe (check_mailbox, permitted by ProbeConfig), a valid
// address takes the probe's verdict before the added reasons:
//
//	probe outcome                 verdict        reason
//	accepted                      deliverable    (none)
//	accepted, domain catch-all    risky          catch_all
//	rejected (5.1.x, 5.2.1)       undeliverable  mailbox_not_found
//	full (4.2.2, 5.2.2)           risky          mailbox_full
//	greylisted (4.7.1, text)      unknown        greylisted (retry_after)
//	temporary (other 4xx)         unknown        (none; retry_after)
//	refused (other 5xx)           unknown        (none)
//	unavailable (no MX answered)  unknown        smtp_unavailable
//	private (loopback MX)         undeliverable  no_mail_server
//
// Without a probe the verdict never says mailbox_not_found: "deliverable"
// then means every check but the mailbox passed. A probe says EHLO, tries
// STARTTLS when offered, MAIL FROM, RCPT TO the address and then an
// unguessable address at the same domain (catch-all, remembered per domain
// for a day), RSET and QUIT; never DATA. The classes are delivery's
// (delivery.Error: RecipientRejected, MailboxFull, Greylisted). Probe
// findings are not cached with the verdict.
//
// # Spamtrap score
//
// SpamtrapScore = 1 / (1 + e^-(bias + Σ wᵢxᵢ)), rounded to 4 decimals,
// with xᵢ in [0, 1] and IsSpamtrap = score ≥ Config.SpamtrapThreshold:
//
//	feature        w     x is 1 when
//	(bias)       -4.0    (score 0.018 with no feature)
//	trap_local    4.0    a local-part token is trap, traps, spam, abuse, bait,
//	                     honeypot, spamtrap, or it contains spamtrap, honeypot,
//	                     blackhole once . - _ are removed
//	hard_bounce   3.0    BounceHistory says the address hard-bounced before
//	typo_domain   2.5    a Suggestion exists
//	random_local  2.0    in [0,1]: Shannon entropy or interleaved digit ratio
//	                     of the local part (see randomness in spamtrap.go)
//	disposable    1.5    the domain is on the disposable list, not allowed
//	role_local    1.0    a role account
//	implicit_mx   1.0    A/AAAA but no MX
//
// All weights are positive, so adding a feature never lowers the score.
// The score is recomputed on cache hits, so a bounce recorded after a
// verdict was cached counts at once.
//
// # Cache
//
// Definitive verdicts that needed DNS (valid, nxdomain, no_mail_server,
// null_mx) are cached for CacheTTL in an in-process LRU and in Cache.
// Everything decided without DNS (syntax, reserved_domain, blocklisted,
// disposable, literals, Offline) is recomputed every time: it costs
// microseconds, would let junk input fill the store, and must follow
// operator list changes at once. dns_unavailable is never cached. A cached
// verdict comes back with Cached true, its original ValidatedAt, the
// Email of the current request and a fresh score.
//
// The key is "<mode>:<normalized address>" in lower case, plus
// "#<warnings>" (the RFC warning codes joined by ",") when there are any.
// Case is folded because no cached part of a verdict depends on it: the
// DNS outcome depends on the domain only, and whatever reads the local part
// (role accounts, the score) is recomputed on every hit. Normalization removes
// quotes and comments, so `"a"@x.com` and `a@x.com` share a normalized
// form but not a verdict: in strict mode the quoted one never reaches the
// cache (it fails at stage 1), and in standard mode its warnings put it
// under another key. Equal keys therefore always mean equal verdicts.
//
// # Batches
//
// Results keep input order, one per entry; entries with equal keys are
// validated once. Summary: Total = entries = Valid + Invalid = Cached +
// Validated, where an entry is Cached when its verdict was in the cache
// before the request (repeats included: two identical uncached entries
// count as 2 validated).
package validation
