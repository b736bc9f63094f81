// Package simnet is a simulated internet on loopback for testing direct
// delivery at scale: several mailbox providers, each an SMTP server on its
// own address with the limits real receivers enforce, hundreds of domains
// whose MX records point at them, a DNS server serving those records, a
// test CA for their certificates and MTA-STS policy servers. It is a peer
// of smtptest (one sink) and dnstest (whose server it uses), and it
// records what a test asserts on: every message, every refusal, and every
// time a client went past a limit.
//
// # Addresses and names
//
// Provider i (from 0) listens on BaseAddr+i (127.0.0.2, 127.0.0.3, ...),
// every provider on the same port, MXPort: the --mx-port of the server
// under test, which dials the addresses the DNS gives for the MX hosts.
// For a provider named NAME:
//
//	domains     d001.NAME.example ... dNNN.NAME.example (ProviderConfig.Domains,
//	            default 100), and any ProviderConfig.DomainNames
//	MX hosts    mx1.NAME.simnet.test (preference 10), mx2.NAME.simnet.test (20),
//	            shared by all its domains, which makes the provider one site;
//	            or ProviderConfig.MXHosts;
//	            with PerDomainMX, one each: d001-NAME-example.mx.NAME.simnet.test
//	A           every MX host → the provider's address
//	MTA-STS     _mta-sts.DOMAIN TXT "v=STSv1; id=ID;", mta-sts.DOMAIN A → the
//	            provider's address, the policy over HTTPS on MTASTSPort
//	DANE        _25._tcp.MXHOST TLSA, as a sender delivering on port 25 looks
//	            them up, and the same at _MXPORT._tcp.MXHOST, as a sender told
//	            to deliver on MXPort (Postline's --mx-port) looks them up
//
// So a shaping rule matches a provider by MXSuffix ".NAME.simnet.test" or
// DomainSuffix ".NAME.example", and every simulated MX by MXSuffix
// ".simnet.test". Everything lives under the reserved .test and .example
// top-level domains (RFC 2606), served only by this package's DNS server.
//
// # Clients and limits
//
// A provider tells clients apart by source address, as receivers do: a
// test dials from 127.0.0.x with a LocalAddr, and a server under test that
// binds no source address arrives from 127.0.0.1. Per client address:
//
//   - MaxConnections: connections held open at once. The one past it is
//     answered ConnectionReply (default "421 4.7.0 too many connections")
//     instead of the greeting and closed. A connection counts from its
//     accept until it is closed by either side; the server closes after its
//     reply to QUIT. Because a provider sees a close a moment after the
//     client makes it, a connection that would exceed the limit (or raise
//     the client's peak) first waits up to Config.ConnectionGrace (200 ms)
//     for one of the client's connections to end.
//   - MessageRate: messages per period, counted at MAIL FROM. A sliding
//     window by default: the MAIL FROM finding Count transactions in the
//     last period (less RateSlack, a twentieth of it and at most a second)
//     is answered RateReply (default "421 4.7.28 NAME: rate limited, try
//     again later"). A transaction counts from its MAIL FROM while in
//     flight, and for good once its message is accepted; one that ends
//     without a message (refused RCPT, RSET, dropped connection) stops
//     counting. RateWindow Fixed counts per clock-aligned period instead.
//   - MaxMessagesPerConnection: messages accepted on one connection; the
//     next MAIL FROM is answered PerConnectionReply (default "421 4.7.0 too
//     many messages on this connection").
//
// A 421 reply closes the connection, as RFC 5321 §3.8 says. Each refusal
// for a limit is a Violation, listed by Net.Violations and counted per
// client in ClientStats, which also hold the peak of connections at once
// (MaxConcurrent), the most messages in any window of the period
// (MaxRate, sliding whatever RateWindow says) and the most on one
// connection. A test of a sender's shaping gives the providers the limits
// the shaping promises to keep and asserts that Violations is empty.
//
// Greylisting defers RCPT TO (GreylistReply, default "450 4.2.0
// greylisted, try again later") for each new (client address, sender,
// recipient) until GreylistDelay has passed since its first attempt; it is
// not a violation. Provider.Inject makes the next MAIL FROM commands get
// given replies, for automation rules that react to replies' text.
//
// # TLS
//
// All certificates come from one test CA created by Start: Net.CertPool
// for clients in the test, Net.CAFile (PEM) for a binary's SSL_CERT_FILE.
// ProviderConfig.TLS offers STARTTLS with a certificate for every MX host
// name of the provider (TLSValid, the CA's certificate following it in the
// chain), for another name (TLSWrongName), self-signed (TLSUntrusted) or
// expired (TLSExpired). An MTA-STS policy server answers
// GET /.well-known/mta-sts.txt for Host mta-sts.DOMAIN of the provider's
// domains (404 otherwise) with a certificate for those names. DANE records
// are TLSA records in dnstest whose answers, and the domains' MX answers,
// carry the AD bit (Config.Authenticate, dnstest's SetAuthenticated by
// default).
//
// # Running the server under test
//
// Net.ServeEnv is the environment for `postline serve`: POSTLINE_DNS_SERVER,
// POSTLINE_MX_PORT, POSTLINE_DELIVERY_ALLOW_PRIVATE=true and, when TLS or
// MTA-STS is in play, SSL_CERT_FILE and POSTLINE_MTA_STS_PORT.
//
// Start takes a few milliseconds (one key per provider and policy server,
// a few thousand DNS records), so every test can have its own Net: all of
// them share the provider addresses, each on its own port.
package simnet
