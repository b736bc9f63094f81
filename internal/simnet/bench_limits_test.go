//go:build simnetbench

package simnet_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/postline/postline/internal/simnet"
)

// benchProvider is one provider of the delivery benchmark: the limits it
// enforces and the shaping section that publishes exactly those limits
// to Postline.
type benchProvider struct {
	cfg     simnet.ProviderConfig
	shaping string
}

// benchProviders are ten providers of 100 domains each with "published"
// limits: connection limits 2-10, message rates of 33-40 a second,
// per-connection caps on five, STARTTLS on two (one with an MTA-STS
// policy in enforce mode), and one (outlook) with an MX host per domain
// whose limits hold for the provider as a whole. Rates are chosen so that
// with the messages spread evenly each provider needs about the same
// time, the slowest (mimecast, 330 in 10 s) setting the bound: about 5
// minutes for 100,000 messages.
//
// The rates are counted over 10 s (two over a minute), not a second: a
// provider forgives a twentieth of its period for the time between the
// sender's decision and the MAIL FROM's arrival (simnet's RateSlack), 50
// ms for a per-second rate, which leaves 20 ms of scheduling jitter at 35
// a second on a loaded two-core machine, and counting per minute would
// let a sender go 60 s early, a fifth of the run (see rateBound).
func benchProviders() []benchProvider {
	site := func(name string, keys ...string) string {
		return fmt.Sprintf("[provider.%q]\nmatch = [{MXSuffix = \".%s.simnet.test\"}]\n%s\n", name, name, strings.Join(keys, "\n"))
	}
	per10s := func(n int) simnet.Rate { return simnet.Rate{Count: n, Per: 10 * time.Second} }
	return []benchProvider{
		{simnet.ProviderConfig{Name: "gmail", MaxConnections: 10, MessageRate: simnet.PerMinute(2100)},
			site("gmail", "connection_limit = 10", `max_message_rate = "2100/min"`)},
		{simnet.ProviderConfig{Name: "outlook", PerDomainMX: true, MaxConnections: 5, MessageRate: per10s(350),
			MaxMessagesPerConnection: 10},
			site("outlook", "provider_connection_limit = 5", `provider_max_message_rate = "350/10s"`,
				"max_deliveries_per_connection = 10")},
		{simnet.ProviderConfig{Name: "yahoo", MaxConnections: 4, MessageRate: per10s(360), MaxMessagesPerConnection: 20,
			TLS: simnet.TLSValid},
			site("yahoo", "connection_limit = 4", `max_message_rate = "360/10s"`, "max_deliveries_per_connection = 20")},
		{simnet.ProviderConfig{Name: "icloud", MaxConnections: 2, MessageRate: per10s(340), MaxMessagesPerConnection: 10},
			site("icloud", "connection_limit = 2", `max_message_rate = "340/10s"`, "max_deliveries_per_connection = 10")},
		{simnet.ProviderConfig{Name: "comcast", MaxConnections: 3, MessageRate: per10s(400), MaxMessagesPerConnection: 50},
			site("comcast", "connection_limit = 3", `max_message_rate = "400/10s"`, "max_deliveries_per_connection = 50")},
		{simnet.ProviderConfig{Name: "mimecast", MaxConnections: 6, MessageRate: per10s(330), TLS: simnet.TLSValid,
			MTASTS: &simnet.MTASTSPolicy{Mode: "enforce"}},
			site("mimecast", "connection_limit = 6", `max_message_rate = "330/10s"`, `enable_tls = "Opportunistic"`)},
		{simnet.ProviderConfig{Name: "proton", MaxConnections: 8, MessageRate: per10s(380)},
			site("proton", "connection_limit = 8", `max_message_rate = "380/10s"`)},
		{simnet.ProviderConfig{Name: "zoho", MaxConnections: 2, MessageRate: per10s(360)},
			site("zoho", "connection_limit = 2", `max_message_rate = "360/10s"`)},
		{simnet.ProviderConfig{Name: "gmx", MaxConnections: 5, MessageRate: simnet.PerMinute(2200), MaxMessagesPerConnection: 100},
			site("gmx", "connection_limit = 5", `max_message_rate = "2200/min"`, "max_deliveries_per_connection = 100")},
		{simnet.ProviderConfig{Name: "fastmail", MaxConnections: 7, MessageRate: per10s(370)},
			site("fastmail", "connection_limit = 7", `max_message_rate = "370/10s"`)},
	}
}

// benchShaping is the shaping file for providers: their sections only, so
// Postline's built-in rules (which answer a 421 with a slowdown) do not
// apply.
func benchShaping(providers []benchProvider) string {
	var b strings.Builder
	b.WriteString("# The providers' published limits, exactly (simnet delivery benchmark).\n\n")
	for _, p := range providers {
		b.WriteString(p.shaping + "\n")
	}
	return b.String()
}

// rateBound is the shortest time, from the first message's MAIL FROM to
// the last one's, in which m messages can go to a provider that allows
// r.Count of them in any window of r.Per: the first r.Count may go at
// once, and message i+Count no sooner than r.Per after message i, so
// the last waits floor((m-1)/Count) whole periods. Zero without a rate.
//
// Connection limits and per-connection caps imply no time on their own:
// they bound how many messages are in flight, not how many go per second;
// what they cost is the time each message holds a connection (SMTP round
// trips, TLS handshakes, reconnecting after a cap), which is the sender's
// and the network's, not a published limit, and is what the measured
// time holds beyond the bound.
func rateBound(r simnet.Rate, m int) time.Duration {
	if r.Count <= 0 || m <= 1 {
		return 0
	}
	return time.Duration((m-1)/r.Count) * r.Per
}

// spacedBound is the same time for a sender that spaces messages evenly
// at the rate (Postline without max_burst): (m-1) intervals of
// Per/Count. It equals rateBound for per-second rates and is longer for
// per-minute ones, whose whole count a window allows at once.
func spacedBound(r simnet.Rate, m int) time.Duration {
	if r.Count <= 0 || m <= 1 {
		return 0
	}
	return time.Duration(float64(m-1) * float64(r.Per) / float64(r.Count))
}
