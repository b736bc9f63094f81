// Package shaping reads traffic-shaping files in KumoMTA's shaping.toml
// format and answers, for a destination domain, its MX hosts and an egress
// source, which limits and automation rules apply (Rules.For). It does no
// DNS and no delivery: the caller passes the MX hosts, enforces the limits
// and reports replies to the rules.
//
// # Files
//
// A file has three kinds of sections; keys are KumoMTA's:
//
//	["default"]                      applies to every domain
//	["DOMAIN"]                       a destination domain (quoted: the dots are part of the name)
//	[provider."NAME"]                domains matched by MX host or domain suffix
//	["DOMAIN".sources."SOURCE"]      overrides for one egress source (also under a provider)
//	[["SECTION".automation]]         rules reacting to remote replies
//
// The per-site keys (type Limits) are connection_limit, max_connection_rate,
// max_message_rate, max_deliveries_per_connection, idle_timeout,
// enable_tls, enable_mta_sts, enable_dane and
// consecutive_connection_failures_before_delay, with Postline's own
// max_recipients_per_transaction (Postfix's
// default_destination_recipient_limit; KumoMTA has none). Domain sections add
// mx_rollup (default true) and replace_base; provider sections add match
// (a list of {MXSuffix=...}, {DomainSuffix=...}, {HostName=...}),
// provider_connection_limit and provider_max_message_rate. Values are
// written as KumoMTA writes them: rates "N/s" ... "N/day" (ParseRate),
// durations as Go or as phrases such as "2 hours" (ParseDuration), limits as
// integers or "local:N" (ParseLimit).
//
// Any other key is ignored with one warning listing them all (KumoMTA's
// data_timeout, max_ready, ... load, they just do nothing here). A value
// Postline cannot use (a rate without a unit, enable_tls = "Maybe", a rule
// without duration) is a *FileError naming the file, line and key. An
// automation pattern that only KumoMTA's fancy-regex can run (lookaround,
// except a leading ^(?!...), which is translated) and the actions Postline
// does not carry out (SuspendCampaign, SetDomainConfig, Bounce*) are
// dropped with a warning.
//
// # Merging
//
// Files are merged in order, a later file over an earlier one, section by
// section and key by key; replace_base = true in a section discards what
// earlier files said for that section; automation rules accumulate. For a
// domain, the sections apply in KumoMTA's order (shaping.rs,
// get_egress_path_config), each over the one before:
//
//  1. ["default"]
//  2. every matching provider, in the order providers first appear
//  3. those providers' sources."SOURCE"
//  4. the mx_rollup domain sections of the domain's site
//  5. the domain's own mx_rollup = false section
//  6. the sources."SOURCE" of 4, then of 5
//
// A provider matches when a DomainSuffix is a suffix of the domain, or when
// every MX host ends with one of its MXSuffix entries or equals a HostName
// (plain suffixes, compared in lowercase without trailing dots).
//
// # Sites
//
// A domain's site is named from the set of its MX host names (SiteName,
// KumoMTA's factor_names): domains hosted at the same MX hosts share a site
// and so a queue and one set of limits. A domain section with mx_rollup =
// false makes its domain a site of its own. A domain section with mx_rollup
// = true applies to every domain of its domain's site once
// Rules.ResolveSites has looked its MX hosts up (as KumoMTA does when it
// loads a file); before that, or when the lookup fails, it applies to its
// own domain.
//
// # Automation
//
// Rule.Matches tests a reply line; the rules of a domain come in order
// default, providers, site, domain. Actions are Suspend, SuspendTenant and
// SetConfig (an override of one per-site key, applied with Limits.With);
// a rule with trigger = {Threshold="N/h"} acts once N replies matched in
// the period. Carrying actions out is the caller's business.
//
// # Reloading
//
// A Watcher checks the files' contents every few seconds and loads them
// again when they change. A change that fails to load is logged with its
// file, line and key and the rules in force stay. With no file the
// built-in rules (builtin.toml, Builtin) apply.
package shaping
