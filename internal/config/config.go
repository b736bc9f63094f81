// Package config holds Postline's configuration: one value built from
// defaults, an optional JSON file, POSTLINE_* environment variables and
// command-line flags, in rising order of precedence. Every subcommand reads
// the same configuration so the CLI and `serve` agree on the database.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// Config is the whole configuration. It is a value: pass it, never store it
// in a global.
type Config struct {
	Addr        string // HTTP listen address
	DataDir     string // SQLite file, secret key
	DatabaseURL string // sqlite:PATH or postgres://...
	PublicURL   string // base URL for tracking links
	DNSServer   string // host:port of the resolver; empty = the system's
	SMTPListen  string // inbound SMTP for bounces and inbound domains; empty = off
	// SMTPMaxBytes bounds a message to the inbound listener.
	SMTPMaxBytes int64
	// InboundMaxHeaderBytes bounds the header of a message to an inbound
	// domain (552 past it): routes, posts and reads of stored copies
	// unfold and list every field of it.
	InboundMaxHeaderBytes int64
	// InboundActionsPerMessage bounds the forwards (each destination) and
	// store notifications one received message's routes hand on, over all
	// its recipients (550 5.7.0 past it).
	InboundActionsPerMessage int
	// InboundMXHost is the host inbound domains are told to publish as
	// their MX; empty: the host of PublicURL when that is set.
	InboundMXHost string
	// InboundRetention is how long stored received messages are kept.
	InboundRetention time.Duration
	// InboundPerIPPerMinute bounds the messages to inbound domains one
	// client address may send a minute (421 past it).
	InboundPerIPPerMinute int
	// InboundStoreBytesPerAccount bounds the bytes of one account's
	// stored received messages (452 past it, until retention frees room).
	InboundStoreBytesPerAccount int64
	// InboundPostBytesPerAccount bounds the bytes of the messages one
	// account's pending posts to its routes' URLs hold, a copy each (452
	// past it, until posts end).
	InboundPostBytesPerAccount int64
	// InboundMaxForwards bounds the forward marks a received message may
	// carry and still be forwarded to an address (a forward past it is
	// refused: a loop through other servers' forwards).
	InboundMaxForwards int
	// InboundPostTimeout bounds one post of a route's forward to a URL or
	// store notification; InboundPostFirstRetry is the wait after its first
	// failure (doubling to an hour), InboundPostRetryWindow how long after
	// it was queued a failing post is retried.
	InboundPostTimeout, InboundPostFirstRetry, InboundPostRetryWindow time.Duration
	// SMTPMaxConnections and SMTPMaxConnectionsPerIP bound each SMTP
	// listener (inbound and both submission ones): connections open at
	// once, and from one client address.
	SMTPMaxConnections, SMTPMaxConnectionsPerIP int
	// SMTPPreAuthTimeout is how long an SMTP client has from connecting to
	// AUTH (submission) or MAIL (inbound); SMTPCommandTimeout is how long
	// it may then stay silent between commands (RFC 5321 4.5.3.2.7).
	SMTPPreAuthTimeout, SMTPCommandTimeout time.Duration
	// HTTPMaxConnections bounds the API's listener, and
	// HTTPMaxConnectionsPerIP what one client address may hold of it (0:
	// no per-address bound, behind a reverse proxy that is every client).
	HTTPMaxConnections, HTTPMaxConnectionsPerIP int

	RateValidationPerHour int    // per account, validation endpoints
	RateDomainPerMinute   int    // per account, domain endpoints
	RateStore             string // memory | database | redis
	RedisURL              string // redis://host:port/db, for RateStore redis

	MXPort        int             // port for direct-to-MX delivery
	MTASTSPort    int             // HTTPS port of MTA-STS policy hosts (443; tests use their own)
	RetrySchedule []time.Duration // delays between attempts
	MaxMessageAge time.Duration   // give up after this

	DeliveryWorkers  int           // attempts at once per process
	DeliveryLease    time.Duration // how long a claimed delivery is held without renewal
	DomainSendRate   int           // messages per minute per sending domain; 0 = unlimited
	RelayTLSInsecure bool          // skip certificate checks of SMTP relays (self-signed relays)
	// WebhookAllowPrivate lets webhooks post to loopback and private addresses.
	WebhookAllowPrivate bool
	// DeliveryAllowPrivate lets direct delivery connect to MX hosts at
	// loopback and private addresses (tests, simulated networks).
	DeliveryAllowPrivate bool
	HeloName             string // EHLO name; empty = the host name
	// ShapingFiles are traffic-shaping files in KumoMTA's format, later ones
	// over earlier ones (internal/shaping); none: the built-in rules.
	ShapingFiles []string
	// EgressFile is the egress sources and pools file (internal/egress);
	// "" for none: every delivery leaves from the system's address.
	EgressFile string

	BlocklistFile      string        // operator blocklist: domains and addresses, one a line
	AllowlistFile      string        // operator allowlist, same format; wins over every list
	ValidationCacheTTL time.Duration // how long definitive validation answers are cached
	SpamtrapThreshold  float64       // score from which is_spamtrap is true

	SecretKey      string   // base64 32-byte key for secrets at rest; empty = DataDir/secret.key
	RelayAllowlist []string // SMTP relay hosts tenants may set over the API
	SPFRecord      string   // the SPF TXT value domains are told to publish

	LogFormat string // text | json
	LogLevel  string // debug | info | warn | error
	// CPUProfile, when set, is the file serve writes a CPU profile of its
	// whole run to (go tool pprof), for an operator or a benchmark that
	// asks where the time goes.
	CPUProfile string

	LogRetention time.Duration // delivery log entries older than this are pruned; 0 keeps them

	// APITLS serves the HTTP listener over TLS with TLSCert and TLSKey (PEM
	// files, reloaded when they change); without it the API is plain HTTP,
	// for deployments behind a reverse proxy.
	APITLS          bool
	TLSCert, TLSKey string

	// Console serves the web console on the API's listener.
	Console            bool
	ConsoleIdleTimeout time.Duration

	// SubmissionListen and SubmissionsListen are the SMTP submission
	// listeners (STARTTLS, and implicit TLS); empty: off.
	SubmissionListen, SubmissionsListen string
	SubmissionMaxBytes                  int64
	// SubmissionAllowPlainAuth offers AUTH before TLS (loopback only).
	SubmissionAllowPlainAuth bool
	// SubmissionSessionsPerAccount bounds the authenticated submission
	// sessions one account holds open at once (in this process).
	SubmissionSessionsPerAccount int
	// AuthAttemptsPerLogin and AuthAttemptsPerAddress bound failed
	// credential checks (SMTP AUTH, console sign-in) in 15 minutes.
	AuthAttemptsPerLogin, AuthAttemptsPerAddress int
	// PasswordCheckConcurrency bounds the argon2id password checks running
	// at once (19 MiB each); others wait up to 2 s, then are refused (429).
	PasswordCheckConcurrency int

	// AttachIsolation runs attachment processing in a child process limited
	// to AttachMemoryMiB of address space and AttachTimeout.
	AttachIsolation bool
	AttachMemoryMiB int
	AttachTimeout   time.Duration

	// MaxRenderedBytesPerRequest bounds what one send request stores, every
	// recipient's rendered message and its attachments together (413).
	MaxRenderedBytesPerRequest int64
	// AccountDailyBytes bounds what one account's sends store in a UTC day
	// (429 with Retry-After past it).
	AccountDailyBytes int64

	// The spool's budgets, shared by every door (SMTP submission, inbound,
	// HTTP multipart bodies; internal/spool): SpoolMemory bounds the
	// unfinished bodies kept in memory all together (past it they go to
	// disk), SpoolMaxBytes the bytes in spool files at once (past it a
	// body is refused: 452 / 507), SpoolProcessingMemory the bodies read
	// back from disk at once (past it a body waits up to 2 s, then 451 /
	// 503).
	SpoolMemory, SpoolMaxBytes, SpoolProcessingMemory int64

	DomainClaimTTL time.Duration // how long an unverified domain claim lasts
	// DomainRecheckInterval is how often serve looks up each verified
	// domain's records again (0: never).
	DomainRecheckInterval time.Duration
	// ScheduleMaxAhead bounds a send's deliver_at.
	ScheduleMaxAhead time.Duration
	// Mailbox probes (--validation-smtp-probe): off unless set; a probe
	// runs only for requests with check_mailbox.
	ValidationSMTPProbe         bool
	ValidationHelo              string
	ValidationMailFrom          string
	ValidationProbeAllowPrivate bool
	ValidationProbeTimeout      time.Duration // one address's probe, all its MX hosts
	// ValidationJobLease is how long a process holds a list-cleaning job
	// for one batch: a job whose process died goes on elsewhere after it.
	ValidationJobLease time.Duration
	// LogExportsPerAccount is how many log exports (console or API) one
	// account may run at once in a process (429 past it).
	LogExportsPerAccount int
	// MessageRebuilds is how many message copies (a message's page, its
	// frame, raw copy and attachments) are built at once in a process, at
	// most 2 of one domain's.
	MessageRebuilds int
	// ValidationJobsPerAccount is how many unfinished list-cleaning jobs
	// one account may have (429 past it).
	ValidationJobsPerAccount int
	// MembersPerAccount bounds an account's console members, pending
	// invitations included; MemberInvitesPerAccount its invitations not
	// yet used nor expired.
	MembersPerAccount       int
	MemberInvitesPerAccount int
	ValidationProbeCacheTTL time.Duration // how long a definitive probe finding is reused
	ValidationCatchAllTTL   time.Duration // how long a domain's catch-all finding is reused
	// ValidationProbeRequestBudget bounds all the probes of one API request.
	ValidationProbeRequestBudget time.Duration
	// TrackingPerAddressPerMinute is how many opens, clicks and
	// unsubscribes one client address may record a minute; past it the
	// tracking endpoints still answer but record nothing.
	TrackingPerAddressPerMinute int
	// ValidationSharedHistory lets every account's bounces and complaints
	// inform every account's validation (one organisation on one server).
	ValidationSharedHistory bool

	ShutdownTimeout time.Duration
	// DBTimeout bounds each database call a request makes (the wait for a
	// connection, a statement, a transaction): past it the request answers
	// 503 instead of hanging on a database that stopped answering.
	DBTimeout time.Duration

	// sources says where each setting that is not a default came from
	// ("--secret-key", "POSTLINE_SECRET_KEY", "FILE: secret-key"), for
	// messages that must tell the operator which value to fix.
	sources map[string]string
}

// Source says where the setting named by its flag came from: "--NAME" for
// a flag, the environment variable's name, "FILE: NAME" for the JSON file,
// or "" for the default.
func (c Config) Source(name string) string { return c.sources[name] }

// absolutePaths resolves the data directory and a relative SQLite path
// once, against the working directory, so every message names the same
// absolute location and a later chdir changes nothing.
func (c *Config) absolutePaths() error {
	if c.DataDir != "" {
		abs, err := filepath.Abs(c.DataDir)
		if err != nil {
			return fmt.Errorf("config: data-dir: %w", err)
		}
		c.DataDir = abs
	}
	if p, ok := strings.CutPrefix(c.DatabaseURL, "sqlite:"); ok && p != "" && !filepath.IsAbs(p) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("config: database-url: %w", err)
		}
		c.DatabaseURL = "sqlite:" + abs
	}
	if c.EgressFile != "" {
		abs, err := filepath.Abs(c.EgressFile)
		if err != nil {
			return fmt.Errorf("config: egress-file: %w", err)
		}
		c.EgressFile = abs
	}
	for i, p := range c.ShapingFiles {
		abs, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("config: shaping-file: %w", err)
		}
		c.ShapingFiles[i] = abs
	}
	return nil
}

// SQLitePath is the database file when the database is SQLite.
func (c Config) SQLitePath() (string, bool) {
	return strings.CutPrefix(c.Database(), "sqlite:")
}

// DatabaseLocation names the database for messages: the SQLite file's
// path, or the PostgreSQL URL without its password.
func (c Config) DatabaseLocation() string {
	if p, ok := c.SQLitePath(); ok {
		return p
	}
	return redact(c.Database())
}

// Default returns the configuration used when nothing is set.
func Default() Config {
	return Config{
		Addr:                        "127.0.0.1:8025",
		DataDir:                     "./postline-data",
		RateValidationPerHour:       1000,
		RateDomainPerMinute:         120,
		MXPort:                      25,
		MTASTSPort:                  443,
		SMTPMaxBytes:                25 << 20,
		InboundMaxHeaderBytes:       1 << 20,
		InboundActionsPerMessage:    500,
		InboundRetention:            72 * time.Hour,
		InboundPerIPPerMinute:       60,
		InboundStoreBytesPerAccount: 1 << 30,
		InboundPostBytesPerAccount:  1 << 30,
		InboundMaxForwards:          10,
		InboundPostTimeout:          30 * time.Second,
		InboundPostFirstRetry:       10 * time.Second,
		InboundPostRetryWindow:      8 * time.Hour,
		SMTPMaxConnections:          1000,
		SMTPMaxConnectionsPerIP:     20,
		SMTPPreAuthTimeout:          30 * time.Second,
		SMTPCommandTimeout:          5 * time.Minute,
		HTTPMaxConnections:          2000,
		HTTPMaxConnectionsPerIP:     200,
		RetrySchedule: []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute,
			time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour},
		MaxMessageAge:                5 * 24 * time.Hour, // Postfix's maximal_queue_lifetime
		DeliveryWorkers:              8,
		DeliveryLease:                2 * time.Minute,
		ValidationCacheTTL:           7 * 24 * time.Hour,
		SpamtrapThreshold:            0.5,
		SPFRecord:                    "v=spf1 a mx ~all",
		LogFormat:                    "text",
		LogLevel:                     "info",
		ShutdownTimeout:              15 * time.Second,
		DBTimeout:                    5 * time.Second,
		LogRetention:                 30 * 24 * time.Hour,
		DomainClaimTTL:               72 * time.Hour,
		DomainRecheckInterval:        24 * time.Hour,
		ScheduleMaxAhead:             7 * 24 * time.Hour,
		ValidationProbeTimeout:       15 * time.Second,
		ValidationJobLease:           2 * time.Minute,
		ValidationJobsPerAccount:     3,
		MembersPerAccount:            50,
		MemberInvitesPerAccount:      20,
		LogExportsPerAccount:         2,
		MessageRebuilds:              8,
		ValidationProbeCacheTTL:      24 * time.Hour,
		ValidationCatchAllTTL:        24 * time.Hour,
		ValidationProbeRequestBudget: time.Minute,
		AttachIsolation:              true,
		Console:                      true,
		ConsoleIdleTimeout:           12 * time.Hour,
		SubmissionMaxBytes:           35 << 20,
		SubmissionSessionsPerAccount: 20,

		AuthAttemptsPerLogin:     10,
		AuthAttemptsPerAddress:   50,
		PasswordCheckConcurrency: 4,
		AttachMemoryMiB:          1024,
		AttachTimeout:            2 * time.Minute,

		MaxRenderedBytesPerRequest: 100 << 20,
		AccountDailyBytes:          10 << 30,
		SpoolMemory:                64 << 20,
		SpoolMaxBytes:              4 << 30,
		SpoolProcessingMemory:      512 << 20,

		TrackingPerAddressPerMinute: 120,
	}
}

// Database returns the effective database URL: DatabaseURL, or SQLite in
// the data directory.
func (c Config) Database() string {
	if c.DatabaseURL != "" {
		return c.DatabaseURL
	}
	return "sqlite:" + filepath.Join(c.DataDir, "postline.db")
}

// SpoolDir holds the temporary files of messages and uploads larger than
// a mebibyte while they arrive (internal/spool).
func (c Config) SpoolDir() string { return filepath.Join(c.DataDir, "spool") }

// IsPostgres reports whether the database is PostgreSQL.
func (c Config) IsPostgres() bool {
	u := c.Database()
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// EffectivePublicURL is PublicURL, or http:// + Addr.
func (c Config) EffectivePublicURL() string {
	if c.PublicURL != "" {
		return strings.TrimRight(c.PublicURL, "/")
	}
	if c.APITLS {
		return "https://" + c.Addr
	}
	return "http://" + c.Addr
}

// EffectiveInboundMXHost is the host inbound domains publish as their MX:
// InboundMXHost, else the host of PublicURL when one is set, else "".
func (c Config) EffectiveInboundMXHost() string {
	if c.InboundMXHost != "" {
		return strings.ToLower(strings.TrimSuffix(c.InboundMXHost, "."))
	}
	if c.PublicURL == "" {
		return ""
	}
	u, err := url.Parse(c.PublicURL)
	if err != nil || net.ParseIP(u.Hostname()) != nil {
		return "" // an MX names a host, never an address
	}
	return strings.ToLower(u.Hostname())
}

// EffectiveRateStore is RateStore, or the default for the database: memory
// for SQLite (one process), database for PostgreSQL (shared by processes).
func (c Config) EffectiveRateStore() string {
	if c.RateStore != "" {
		return c.RateStore
	}
	if c.IsPostgres() {
		return "database"
	}
	return "memory"
}

// Validate checks the configuration and names every bad setting.
func (c Config) Validate() error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: %s: %s", name, fmt.Sprintf(format, args...)))
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		bad("addr", "want host:port, got %q", c.Addr)
	}
	if c.DataDir == "" {
		bad("data-dir", "must not be empty")
	}
	db := c.Database()
	if !strings.HasPrefix(db, "sqlite:") && !c.IsPostgres() {
		bad("database-url", "want sqlite:PATH or postgres://..., got %q", redact(db))
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("public-url", "want an http(s) URL, got %q", c.PublicURL)
		}
	}
	for name, hp := range map[string]string{"dns-server": c.DNSServer, "smtp-listen": c.SMTPListen} {
		if hp == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(hp); err != nil {
			bad(name, "want host:port, got %q", hp)
		}
	}
	if c.RateValidationPerHour < 1 {
		bad("rate-validation-per-hour", "must be at least 1, got %d", c.RateValidationPerHour)
	}
	if c.RateDomainPerMinute < 1 {
		bad("rate-domain-per-minute", "must be at least 1, got %d", c.RateDomainPerMinute)
	}
	switch c.EffectiveRateStore() {
	case "memory", "database":
	case "redis":
		if c.RedisURL == "" {
			bad("redis-url", "required when rate-store is redis")
		}
	default:
		bad("rate-store", "want memory, database or redis, got %q", c.RateStore)
	}
	if c.MXPort < 1 || c.MXPort > 65535 {
		bad("mx-port", "must be 1..65535, got %d", c.MXPort)
	}
	if c.MTASTSPort < 1 || c.MTASTSPort > 65535 {
		bad("mta-sts-port", "must be 1..65535, got %d", c.MTASTSPort)
	}
	if len(c.RetrySchedule) == 0 {
		bad("retry-schedule", "needs at least one delay")
	}
	for _, d := range c.RetrySchedule {
		if d <= 0 {
			bad("retry-schedule", "delays must be positive, got %s", d)
		}
	}
	if c.MaxMessageAge <= 0 {
		bad("max-message-age", "must be positive")
	}
	if c.SMTPMaxBytes < 1024 || c.SMTPMaxBytes > 100<<20 {
		bad("smtp-max-bytes", "must be between 1024 and 104857600, got %d", c.SMTPMaxBytes)
	}
	if c.InboundMXHost != "" && !validHostName(c.InboundMXHost) {
		bad("inbound-mx-host", "want a host name (an MX names a host, not an address), got %q", c.InboundMXHost)
	}
	if c.InboundRetention < time.Second || c.InboundRetention > 366*24*time.Hour {
		bad("inbound-retention", "must be between 1s and 366d, got %s", c.InboundRetention)
	}
	if c.InboundPostTimeout < 100*time.Millisecond || c.InboundPostTimeout > 10*time.Minute {
		bad("inbound-post-timeout", "must be between 100ms and 10m, got %s", c.InboundPostTimeout)
	}
	if c.InboundPostFirstRetry < 10*time.Millisecond || c.InboundPostFirstRetry > time.Hour {
		bad("inbound-post-first-retry", "must be between 10ms and 1h, got %s", c.InboundPostFirstRetry)
	}
	if c.InboundPostRetryWindow < time.Second || c.InboundPostRetryWindow > 7*24*time.Hour {
		bad("inbound-post-retry-window", "must be between 1s and 7d, got %s", c.InboundPostRetryWindow)
	}
	if c.InboundPerIPPerMinute < 1 {
		bad("inbound-per-ip-per-minute", "must be at least 1, got %d", c.InboundPerIPPerMinute)
	}
	if c.InboundMaxForwards < 1 || c.InboundMaxForwards > 100 {
		bad("inbound-max-forwards", "must be between 1 and 100, got %d", c.InboundMaxForwards)
	}
	if c.InboundStoreBytesPerAccount < 64<<10 {
		bad("inbound-store-bytes-per-account", "must be at least 64KiB, got %d bytes", c.InboundStoreBytesPerAccount)
	}
	if c.InboundActionsPerMessage < 1 || c.InboundActionsPerMessage > 100000 {
		bad("inbound-actions-per-message", "must be 1 to 100000, got %d", c.InboundActionsPerMessage)
	}
	if c.InboundMaxHeaderBytes < 1024 {
		bad("inbound-max-header-bytes", "must be at least 1KiB, got %d bytes", c.InboundMaxHeaderBytes)
	}
	if c.InboundPostBytesPerAccount < 64<<10 {
		bad("inbound-post-bytes-per-account", "must be at least 64KiB, got %d bytes", c.InboundPostBytesPerAccount)
	}
	if c.SMTPMaxConnections < 1 {
		bad("smtp-max-connections", "must be at least 1, got %d", c.SMTPMaxConnections)
	}
	if c.SMTPMaxConnectionsPerIP < 1 {
		bad("smtp-max-connections-per-ip", "must be at least 1, got %d", c.SMTPMaxConnectionsPerIP)
	}
	if c.SMTPPreAuthTimeout < 100*time.Millisecond || c.SMTPPreAuthTimeout > 10*time.Minute {
		bad("smtp-pre-auth-timeout", "must be between 100ms and 10m, got %s", c.SMTPPreAuthTimeout)
	}
	if c.SMTPCommandTimeout < 100*time.Millisecond || c.SMTPCommandTimeout > time.Hour {
		bad("smtp-command-timeout", "must be between 100ms and 1h, got %s", c.SMTPCommandTimeout)
	}
	if c.HTTPMaxConnections < 16 {
		bad("http-max-connections", "must be at least 16, got %d", c.HTTPMaxConnections)
	}
	if c.HTTPMaxConnectionsPerIP < 0 {
		bad("http-max-connections-per-ip", "must be 0 (off) or more, got %d", c.HTTPMaxConnectionsPerIP)
	}
	if c.DeliveryWorkers < 1 || c.DeliveryWorkers > 1000 {
		bad("delivery-workers", "must be 1..1000, got %d", c.DeliveryWorkers)
	}
	if c.DeliveryLease < time.Second {
		bad("delivery-lease", "must be at least 1s, got %s", c.DeliveryLease)
	}
	if c.DomainSendRate < 0 {
		bad("domain-send-rate", "must not be negative")
	}
	if c.ValidationCacheTTL <= 0 {
		bad("validation-cache-ttl", "must be positive")
	}
	if c.SpamtrapThreshold <= 0 || c.SpamtrapThreshold > 1 {
		bad("spamtrap-threshold", "must be in (0, 1], got %g", c.SpamtrapThreshold)
	}
	if c.LogRetention != 0 && c.LogRetention < time.Hour {
		bad("log-retention", "must be 0 (keep forever) or at least 1h, got %s", c.LogRetention)
	}
	if c.APITLS && (c.TLSCert == "" || c.TLSKey == "") {
		bad("api-tls", "needs --tls-cert and --tls-key (PEM files)")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		bad("tls-cert", "--tls-cert and --tls-key go together")
	}
	if c.SubmissionAllowPlainAuth {
		for flag, addr := range map[string]string{"submission-listen": c.SubmissionListen, "submissions-listen": c.SubmissionsListen} {
			if addr != "" && !IsLoopback(addr) {
				bad("submission-allow-plain-auth", "is for loopback listeners only; %s is %s", flag, addr)
			}
		}
	}
	if c.SubmissionMaxBytes < 1024 {
		bad("submission-max-bytes", "must be at least 1024, got %d", c.SubmissionMaxBytes)
	}
	if c.SubmissionSessionsPerAccount < 1 {
		bad("submission-sessions-per-account", "must be at least 1, got %d", c.SubmissionSessionsPerAccount)
	}
	if c.AuthAttemptsPerLogin < 1 || c.AuthAttemptsPerAddress < 1 {
		bad("auth-attempts-per-login", "the failed-attempt limits must be at least 1")
	}
	if c.PasswordCheckConcurrency < 1 || c.PasswordCheckConcurrency > 256 {
		bad("password-check-concurrency", "must be 1..256, got %d", c.PasswordCheckConcurrency)
	}
	if c.ConsoleIdleTimeout < time.Minute {
		bad("console-idle-timeout", "must be at least 1m, got %s", c.ConsoleIdleTimeout)
	}
	if c.AttachMemoryMiB < 64 {
		bad("attach-memory-limit", "must be at least 64 (MiB), got %d", c.AttachMemoryMiB)
	}
	if c.AttachTimeout < time.Second {
		bad("attach-timeout", "must be at least 1s, got %s", c.AttachTimeout)
	}
	if c.MaxRenderedBytesPerRequest < 64<<10 {
		bad("max-rendered-bytes-per-request", "must be at least 64KiB, got %d bytes", c.MaxRenderedBytesPerRequest)
	}
	if c.AccountDailyBytes < 64<<10 {
		bad("account-daily-bytes", "must be at least 64KiB, got %d bytes", c.AccountDailyBytes)
	}
	if c.SpoolMemory < 64<<10 {
		bad("spool-memory", "must be at least 64KiB, got %d bytes", c.SpoolMemory)
	}
	if c.SpoolMaxBytes < 1<<20 {
		bad("spool-max-bytes", "must be at least 1MiB, got %d bytes", c.SpoolMaxBytes)
	}
	if c.SpoolProcessingMemory < 1<<20 {
		bad("spool-processing-memory", "must be at least 1MiB, got %d bytes", c.SpoolProcessingMemory)
	}
	if c.ValidationSMTPProbe && strings.TrimSpace(c.ValidationHelo) == "" {
		bad("validation-helo", "is required with --validation-smtp-probe: the name probes say EHLO with (a name whose A record points at this server)")
	}
	if c.ValidationProbeTimeout < 100*time.Millisecond || c.ValidationProbeTimeout > 5*time.Minute {
		bad("validation-probe-timeout", "must be between 100ms and 5m, got %s", c.ValidationProbeTimeout)
	}
	if c.ValidationJobLease < time.Second {
		bad("validation-job-lease", "must be at least 1s, got %s", c.ValidationJobLease)
	}
	if c.ValidationJobsPerAccount < 1 {
		bad("validation-jobs-per-account", "must be at least 1, got %d", c.ValidationJobsPerAccount)
	}
	if c.MembersPerAccount < 1 || c.MembersPerAccount > 10000 {
		bad("members-per-account", "must be between 1 and 10000, got %d", c.MembersPerAccount)
	}
	if c.MemberInvitesPerAccount < 1 || c.MemberInvitesPerAccount > 10000 {
		bad("member-invites-per-account", "must be between 1 and 10000, got %d", c.MemberInvitesPerAccount)
	}
	if c.MessageRebuilds < 2 || c.MessageRebuilds > 1000 {
		bad("message-rebuilds", "must be 2 to 1000, got %d", c.MessageRebuilds)
	}
	if c.LogExportsPerAccount < 1 {
		bad("log-exports-per-account", "must be at least 1, got %d", c.LogExportsPerAccount)
	}
	if c.ValidationProbeCacheTTL < time.Minute {
		bad("validation-probe-cache-ttl", "must be at least 1m, got %s", c.ValidationProbeCacheTTL)
	}
	if c.ValidationProbeRequestBudget < 100*time.Millisecond || c.ValidationProbeRequestBudget > 10*time.Minute {
		bad("validation-probe-request-budget", "must be between 100ms and 10m, got %s", c.ValidationProbeRequestBudget)
	}
	if c.ValidationCatchAllTTL < time.Minute {
		bad("validation-catch-all-ttl", "must be at least 1m, got %s", c.ValidationCatchAllTTL)
	}
	if c.ScheduleMaxAhead < time.Minute || c.ScheduleMaxAhead > 366*24*time.Hour {
		bad("schedule-max-ahead", "must be between 1m and 366d, got %s", c.ScheduleMaxAhead)
	}
	if c.DomainClaimTTL < time.Hour {
		bad("domain-claim-ttl", "must be at least 1h, got %s", c.DomainClaimTTL)
	}
	if c.DomainRecheckInterval != 0 && c.DomainRecheckInterval < time.Second {
		bad("domain-recheck-interval", "must be 0 (off) or at least 1s, got %s", c.DomainRecheckInterval)
	}
	if c.TrackingPerAddressPerMinute < 1 {
		bad("tracking-per-address-per-minute", "must be at least 1, got %d", c.TrackingPerAddressPerMinute)
	}
	if c.DBTimeout < 100*time.Millisecond || c.DBTimeout > 10*time.Minute {
		bad("db-timeout", "must be between 100ms and 10m, got %s", c.DBTimeout)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("log-format", "want text or json, got %q", c.LogFormat)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log-level", "want debug, info, warn or error, got %q", c.LogLevel)
	}
	return errors.Join(errs...)
}

// redact hides a password in a database URL.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// validHostName reports a plausible DNS host name: dot-separated labels
// of letters, digits and hyphens, not an IP address.
func validHostName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 || net.ParseIP(h) != nil {
		return false
	}
	for _, l := range strings.Split(h, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// IsLoopback reports whether a listen address (host:port) is on a loopback
// address (127.0.0.0/8, ::1, localhost).
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
