package config

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Loader binds the configuration flags to a FlagSet. After the FlagSet is
// parsed, Load applies the file and environment to every flag that was not
// given on the command line.
type Loader struct {
	fs     *flag.FlagSet
	cfg    *Config
	file   *string
	getenv func(string) string
}

// Register adds the configuration flags (and --config) to fs. getenv is
// usually os.Getenv; tests pass their own.
func Register(fs *flag.FlagSet, getenv func(string) string) *Loader {
	cfg := Default()
	l := &Loader{fs: fs, cfg: &cfg, getenv: getenv}
	l.file = fs.String("config", "", "JSON file of settings keyed by flag name (env POSTLINE_CONFIG)")
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "HTTP listen `host:port`")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "`directory` for the SQLite file and the secret key")
	fs.StringVar(&cfg.DatabaseURL, "database-url", "", "database `url`: sqlite:PATH or postgres://... (default SQLite in the data dir)")
	fs.StringVar(&cfg.PublicURL, "public-url", "", "base `url` used in tracking links (default http://ADDR)")
	fs.StringVar(&cfg.DNSServer, "dns-server", "", "`host:port` of the resolver for every DNS lookup (default the system's)")
	fs.StringVar(&cfg.SMTPListen, "smtp-listen", "", "inbound SMTP listen `host:port` for bounces and mail to inbound domains (off when empty)")
	fs.Int64Var(&cfg.SMTPMaxBytes, "smtp-max-bytes", cfg.SMTPMaxBytes, "largest message the inbound SMTP listener accepts (SIZE), in bytes")
	fs.StringVar(&cfg.InboundMXHost, "inbound-mx-host", "", "host `name` inbound domains are told to publish as their MX: the inbound listener's (default the host of --public-url)")
	fs.Func("inbound-retention", "how long messages stored by a route's store() are kept, e.g. 72h or 3d (default 72h)", func(s string) error {
		d, err := parseDays(s)
		if err == nil {
			cfg.InboundRetention = d
		}
		return err
	})
	fs.DurationVar(&cfg.InboundPostTimeout, "inbound-post-timeout", cfg.InboundPostTimeout,
		"how long one post of a route's forward to a URL (or store notification) may take")
	fs.DurationVar(&cfg.InboundPostFirstRetry, "inbound-post-first-retry", cfg.InboundPostFirstRetry,
		"wait after a route's post first fails (5xx, no answer); it doubles to an hour")
	fs.DurationVar(&cfg.InboundPostRetryWindow, "inbound-post-retry-window", cfg.InboundPostRetryWindow,
		"how long after it was queued a failing post of a route is retried before it is given up")
	fs.IntVar(&cfg.InboundPerIPPerMinute, "inbound-per-ip-per-minute", cfg.InboundPerIPPerMinute,
		"messages to inbound domains one client address (IPv6: its /64) may send a minute; past it 421 4.7.0")
	byteFlag(fs, &cfg.InboundStoreBytesPerAccount, "inbound-store-bytes-per-account", "most bytes of one account's stored received messages, "+
		"e.g. 1GiB (default 1GiB); past it a message a route stores is refused for now (452 4.2.2) until retention frees room")
	byteFlag(fs, &cfg.InboundMaxHeaderBytes, "inbound-max-header-bytes", "largest header of a message to an inbound domain, e.g. 1MiB "+
		"(default 1MiB); past it the message is refused (552 5.3.4)")
	fs.IntVar(&cfg.InboundActionsPerMessage, "inbound-actions-per-message", cfg.InboundActionsPerMessage,
		"most forwards (each destination) and store notifications one received message's routes hand on, over all its recipients; past it the message is refused (550 5.7.0)")
	byteFlag(fs, &cfg.InboundPostBytesPerAccount, "inbound-post-bytes-per-account", "most bytes of the messages one account's posts to its "+
		"routes' URLs hold while they wait to be sent (each post a copy), e.g. 1GiB (default 1GiB); past it a message is refused for now "+
		"(452 4.2.2) until posts end")
	fs.IntVar(&cfg.InboundMaxForwards, "inbound-max-forwards", cfg.InboundMaxForwards,
		"forwards a received message may have been through (X-Postline-Forwarded-By fields) and still be forwarded to an address by a route")
	fs.IntVar(&cfg.SMTPMaxConnections, "smtp-max-connections", cfg.SMTPMaxConnections,
		"connections each SMTP listener (inbound, submission) holds open at once; past it 421 4.3.2")
	fs.IntVar(&cfg.SMTPMaxConnectionsPerIP, "smtp-max-connections-per-ip", cfg.SMTPMaxConnectionsPerIP,
		"connections one client address may hold open to each SMTP listener; past it 421 4.7.0")
	fs.DurationVar(&cfg.SMTPPreAuthTimeout, "smtp-pre-auth-timeout", cfg.SMTPPreAuthTimeout,
		"how long an SMTP client has from connecting to AUTH (submission) or MAIL (inbound) before it is disconnected")
	fs.DurationVar(&cfg.SMTPCommandTimeout, "smtp-command-timeout", cfg.SMTPCommandTimeout,
		"how long an SMTP client past AUTH (submission) or MAIL (inbound) may stay silent")
	fs.IntVar(&cfg.HTTPMaxConnections, "http-max-connections", cfg.HTTPMaxConnections,
		"connections the HTTP listener holds open at once; past it new ones are closed at once")
	fs.IntVar(&cfg.HTTPMaxConnectionsPerIP, "http-max-connections-per-ip", cfg.HTTPMaxConnectionsPerIP,
		"connections one client address may hold open to the HTTP listener (past it 503); 0 turns the bound off, for a reverse proxy in front")
	fs.IntVar(&cfg.RateValidationPerHour, "rate-validation-per-hour", cfg.RateValidationPerHour, "validation requests per account per hour")
	fs.IntVar(&cfg.RateDomainPerMinute, "rate-domain-per-minute", cfg.RateDomainPerMinute, "domain endpoint requests per account per minute")
	fs.StringVar(&cfg.RateStore, "rate-store", "", "rate-limit counters: memory, database or redis (default memory on SQLite, database on PostgreSQL)")
	fs.StringVar(&cfg.RedisURL, "redis-url", "", "redis://host:port/db `url` for rate-store redis")
	fs.IntVar(&cfg.MXPort, "mx-port", cfg.MXPort, "`port` for direct-to-MX delivery")
	fs.IntVar(&cfg.MTASTSPort, "mta-sts-port", cfg.MTASTSPort,
		"HTTPS `port` MTA-STS policies are fetched from (https://mta-sts.DOMAIN/.well-known/mta-sts.txt); for tests")
	fs.Func("retry-schedule", "comma-separated delays between delivery attempts (default 1m,5m,15m,30m,1h,2h,4h,8h)", func(s string) error {
		d, err := parseDurations(s)
		if err == nil {
			cfg.RetrySchedule = d
		}
		return err
	})
	fs.DurationVar(&cfg.MaxMessageAge, "max-message-age", cfg.MaxMessageAge, "give up delivering after this")
	fs.IntVar(&cfg.DeliveryWorkers, "delivery-workers", cfg.DeliveryWorkers, "delivery attempts at once per process")
	fs.DurationVar(&cfg.DeliveryLease, "delivery-lease", cfg.DeliveryLease, "how long a claimed delivery is held without renewal; a crashed process's deliveries are retried after it")
	fs.IntVar(&cfg.DomainSendRate, "domain-send-rate", 0, "messages per minute per sending domain, shared by all workers and processes (0 = unlimited)")
	fs.BoolVar(&cfg.RelayTLSInsecure, "relay-tls-insecure", false, "do not verify SMTP relay certificates (for self-signed relays)")
	fs.BoolVar(&cfg.WebhookAllowPrivate, "webhook-allow-private", false, "let webhooks post to loopback, private and link-local addresses")
	fs.BoolVar(&cfg.DeliveryAllowPrivate, "delivery-allow-private", false,
		"let direct delivery connect to MX hosts at loopback, private, link-local and other non-public addresses (tests); relays are not affected")
	fs.StringVar(&cfg.HeloName, "helo-name", "", "EHLO `name` for outgoing SMTP (default the host name)")
	fs.Func("shaping-file", "traffic-shaping `file` in KumoMTA's shaping.toml format; repeat it (or separate with commas) "+
		"for several, later ones overriding earlier ones; reloaded when one changes (default the built-in rules)", func(s string) error {
		cfg.ShapingFiles = append(cfg.ShapingFiles, splitList(s)...)
		return nil
	})
	fs.StringVar(&cfg.EgressFile, "egress-file", "", "egress sources and pools `file` (TOML, KumoMTA's sources format): source addresses, EHLO names, "+
		"weighted pools, warm-up schedules; a domain names its pool (postline domain update --pool)")
	fs.StringVar(&cfg.BlocklistFile, "blocklist-file", "", "operator blocklist for validation: one domain or address a line; reloaded on change")
	fs.StringVar(&cfg.AllowlistFile, "allowlist-file", "", "operator allowlist for validation, same format; overrides every blocklist")
	fs.DurationVar(&cfg.ValidationCacheTTL, "validation-cache-ttl", cfg.ValidationCacheTTL, "how long definitive validation answers are cached")
	fs.Float64Var(&cfg.SpamtrapThreshold, "spamtrap-threshold", cfg.SpamtrapThreshold, "spamtrap score from which is_spamtrap is true")
	fs.StringVar(&cfg.SecretKey, "secret-key", "", "base64 32-byte `key` encrypting secrets at rest (default DATA_DIR/secret.key; set it when several processes share PostgreSQL)")
	fs.Func("relay-allowlist", "comma-separated SMTP relay hosts (or *.suffix) tenants may configure over the API", func(s string) error {
		cfg.RelayAllowlist = splitList(s)
		return nil
	})
	fs.StringVar(&cfg.SPFRecord, "spf-record", cfg.SPFRecord, "SPF TXT value domains are asked to publish")
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "text or json")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "debug, info, warn or error")
	fs.StringVar(&cfg.CPUProfile, "cpu-profile", "", "serve writes a CPU profile of its run to this `file` when it stops (go tool pprof; off when empty)")
	fs.Func("log-retention", "how long delivery log entries are kept, e.g. 30d or 720h; 0 keeps them forever (default 30d)", func(s string) error {
		d, err := parseDays(s)
		if err == nil {
			cfg.LogRetention = d
		}
		return err
	})
	fs.BoolVar(&cfg.APITLS, "api-tls", false, "serve the HTTP API over TLS with --tls-cert and --tls-key (default plain HTTP, for a reverse proxy)")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM certificate `file` (chain included) of the TLS listeners; reloaded when it changes")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key `file` of --tls-cert")
	fs.BoolVar(&cfg.Console, "console", cfg.Console, "serve the web console at / on the API's listener (--console=false turns it off)")
	fs.DurationVar(&cfg.ConsoleIdleTimeout, "console-idle-timeout", cfg.ConsoleIdleTimeout, "a console session unused for this long ends")
	fs.StringVar(&cfg.SubmissionListen, "submission-listen", "", "SMTP submission listen `host:port` with STARTTLS, e.g. :587 (off when empty)")
	fs.StringVar(&cfg.SubmissionsListen, "submissions-listen", "", "SMTP submission listen `host:port` with implicit TLS, e.g. :465 (off when empty)")
	fs.Int64Var(&cfg.SubmissionMaxBytes, "submission-max-bytes", cfg.SubmissionMaxBytes, "largest message SMTP submission accepts (SIZE), in bytes")
	fs.IntVar(&cfg.SubmissionSessionsPerAccount, "submission-sessions-per-account", cfg.SubmissionSessionsPerAccount,
		"authenticated SMTP submission sessions one account may hold open at once (per process); past it AUTH answers 454 4.7.0")
	fs.BoolVar(&cfg.SubmissionAllowPlainAuth, "submission-allow-plain-auth", false, "offer AUTH before TLS on loopback submission listeners (tests)")
	fs.IntVar(&cfg.AuthAttemptsPerLogin, "auth-attempts-per-login", cfg.AuthAttemptsPerLogin, "failed SMTP AUTH attempts per login in 15 minutes before it is refused")
	fs.IntVar(&cfg.AuthAttemptsPerAddress, "auth-attempts-per-address", cfg.AuthAttemptsPerAddress, "failed SMTP AUTH attempts per client address in 15 minutes before it is refused")
	fs.IntVar(&cfg.PasswordCheckConcurrency, "password-check-concurrency", cfg.PasswordCheckConcurrency,
		"console password checks (argon2id, 19 MiB each) running at once; others wait up to 2s, then are refused with 429")
	fs.BoolVar(&cfg.AttachIsolation, "attach-isolation", cfg.AttachIsolation,
		"process attachments (watermarks, archives) in a child process with memory and time limits")
	fs.IntVar(&cfg.AttachMemoryMiB, "attach-memory-limit", cfg.AttachMemoryMiB, "address-space limit of the attachment child process, in `MiB`")
	fs.DurationVar(&cfg.AttachTimeout, "attach-timeout", cfg.AttachTimeout, "how long the attachment child process may run for one send")
	fs.Func("max-rendered-bytes-per-request", "most bytes one send request may store, every recipient's rendered message and attachments together, "+
		"e.g. 100MiB (default 100MiB); past it the request is a 413 and nothing is queued", func(s string) error {
		n, err := parseBytes(s)
		if err == nil {
			cfg.MaxRenderedBytesPerRequest = n
		}
		return err
	})
	fs.Func("account-daily-bytes", "most bytes one account's sends may store in a UTC day, e.g. 10GiB (default 10GiB); past it sends are a 429 with Retry-After",
		func(s string) error {
			n, err := parseBytes(s)
			if err == nil {
				cfg.AccountDailyBytes = n
			}
			return err
		})
	byteFlag(fs, &cfg.SpoolMemory, "spool-memory", "most bytes of unfinished message and upload bodies kept in memory, all together, "+
		"e.g. 64MiB (default 64MiB); each body keeps at most 1MiB, and past this budget bodies go on to disk (DATA_DIR/spool)")
	byteFlag(fs, &cfg.SpoolMaxBytes, "spool-max-bytes", "most bytes in spool files (DATA_DIR/spool) at once, e.g. 4GiB (default 4GiB); "+
		"past it a body is refused (SMTP 452 4.3.1, HTTP 507) and nothing is stored")
	byteFlag(fs, &cfg.SpoolProcessingMemory, "spool-processing-memory", "most bytes of spooled bodies read back into memory at once to be processed, "+
		"e.g. 512MiB (default 512MiB); past it a body waits up to 2s, then is refused for now (SMTP 451 4.3.0, HTTP 503 with Retry-After)")
	fs.Func("domain-claim-ttl", "how long an unverified domain claim lasts before it is deleted, e.g. 72h or 3d (default 72h)", func(s string) error {
		d, err := parseDays(s)
		if err == nil {
			cfg.DomainClaimTTL = d
		}
		return err
	})
	fs.Func("domain-recheck-interval", "how often serve looks up each verified domain's DNS records again, e.g. 24h or 1d (default 24h; 0: never); "+
		"a failed re-check leaves the domain verified and shows \"records changed since verification\"", func(s string) error {
		d, err := parseDays(s)
		if err == nil {
			cfg.DomainRecheckInterval = d
		}
		return err
	})
	fs.BoolVar(&cfg.ValidationSMTPProbe, "validation-smtp-probe", false,
		"permit mailbox probes (RCPT TO at the address's MX, never DATA) for validation requests with check_mailbox; needs outbound port 25 and --validation-helo")
	fs.StringVar(&cfg.ValidationHelo, "validation-helo", "", "the EHLO name of mailbox probes (required with --validation-smtp-probe)")
	fs.StringVar(&cfg.ValidationMailFrom, "validation-mail-from", "", "the MAIL FROM of mailbox probes (default postmaster@ the --validation-helo name)")
	fs.BoolVar(&cfg.ValidationProbeAllowPrivate, "validation-probe-allow-private", false,
		"probe MX hosts at loopback or private addresses (tests); otherwise such a domain is undeliverable, not probed")
	fs.DurationVar(&cfg.ValidationProbeTimeout, "validation-probe-timeout", cfg.ValidationProbeTimeout,
		"how long one address's mailbox probe may take, all its MX hosts together (then smtp_unavailable)")
	fs.DurationVar(&cfg.ValidationProbeRequestBudget, "validation-probe-request-budget", cfg.ValidationProbeRequestBudget,
		"how long all the mailbox probes of one API request may take together (probes past it answer smtp_unavailable)")
	fs.DurationVar(&cfg.ValidationJobLease, "validation-job-lease", cfg.ValidationJobLease,
		"how long a process holds a list-cleaning job for one batch; a job whose process died goes on elsewhere after it")
	fs.IntVar(&cfg.MessageRebuilds, "message-rebuilds", cfg.MessageRebuilds,
		"message copies (a sent message's page, frame, raw copy, attachments) built at once, at most 2 of one domain's; past it 429")
	fs.IntVar(&cfg.LogExportsPerAccount, "log-exports-per-account", cfg.LogExportsPerAccount,
		"log exports (CSV or NDJSON, console or API) one account may run at once; past it an export is refused with 429")
	fs.IntVar(&cfg.MembersPerAccount, "members-per-account", cfg.MembersPerAccount,
		"console members one account may have (postline user add-member, the console's /members), pending invitations included")
	fs.IntVar(&cfg.MemberInvitesPerAccount, "member-invites-per-account", cfg.MemberInvitesPerAccount,
		"invitations one account may have pending (links not used nor expired, each good for 24 hours)")
	fs.IntVar(&cfg.ValidationJobsPerAccount, "validation-jobs-per-account", cfg.ValidationJobsPerAccount,
		"unfinished list-cleaning jobs (queued or running) one account may have, and its uploads read at once; past it an upload is refused with 429")
	fs.Func("validation-catch-all-ttl", "how long a domain found to accept every address is remembered, e.g. 24h or 7d (default 24h)", func(s string) error {
		d, err := parseDays(s)
		if err == nil {
			cfg.ValidationCatchAllTTL = d
		}
		return err
	})
	fs.Func("validation-probe-cache-ttl", "how long a definitive probe finding (accepted, rejected, full) is reused, e.g. 24h or 1d (default 24h)", func(s string) error {
		d, err := parseDays(s)
		if err == nil {
			cfg.ValidationProbeCacheTTL = d
		}
		return err
	})
	fs.Func("schedule-max-ahead", "how far ahead a send's deliver_at may be, e.g. 168h or 7d (default 7d)", func(s string) error {
		d, err := parseDays(s)
		if err == nil {
			cfg.ScheduleMaxAhead = d
		}
		return err
	})
	fs.IntVar(&cfg.TrackingPerAddressPerMinute, "tracking-per-address-per-minute", cfg.TrackingPerAddressPerMinute,
		"opens, clicks and unsubscribes one client address may record a minute; past it tracking answers but records nothing")
	fs.BoolVar(&cfg.ValidationSharedHistory, "validation-shared-history", false,
		"let every account's bounces and complaints inform every account's validation (one organisation per server)")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long in-flight requests may take on SIGTERM")
	fs.DurationVar(&cfg.DBTimeout, "db-timeout", cfg.DBTimeout,
		"how long each database call of a request may take (waiting for a connection included); past it the request answers 503")
	return l
}

// Load applies the file and environment to flags not set on the command
// line, validates, and returns the configuration. Call it after fs.Parse.
func (l *Loader) Load() (Config, error) {
	explicit := map[string]bool{}
	l.fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	path := *l.file
	if path == "" {
		path = l.getenv("POSTLINE_CONFIG")
	}
	fileVals := map[string]string{}
	if path != "" {
		var err error
		if fileVals, err = readFile(path); err != nil {
			return Config{}, err
		}
	}
	var err error
	sources := map[string]string{}
	l.fs.VisitAll(func(f *flag.Flag) {
		if err != nil || explicit[f.Name] || f.Name == "config" {
			return
		}
		env := EnvName(f.Name)
		v, ok := l.getenv(env), false
		if v != "" {
			ok = true
		} else if fv, has := fileVals[f.Name]; has {
			v, ok, env = fv, true, path+": "+f.Name
		}
		if !ok {
			return
		}
		if e := f.Value.Set(v); e != nil {
			err = fmt.Errorf("config: %s: %v", env, e)
		}
		sources[f.Name] = env
	})
	if err != nil {
		return Config{}, err
	}
	for name := range explicit {
		sources[name] = "--" + name
	}
	l.cfg.sources = sources
	if err := l.cfg.absolutePaths(); err != nil {
		return Config{}, err
	}
	return *l.cfg, l.cfg.Validate()
}

// EnvName is the environment variable of a setting: POSTLINE_ and the flag
// name in capitals with underscores (--dns-server is POSTLINE_DNS_SERVER).
func EnvName(flagName string) string {
	return "POSTLINE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func readFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("config: %s: not a JSON object: %v", path, err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		switch v := v.(type) {
		case string:
			out[k] = v
		case float64:
			out[k] = strconv.FormatFloat(v, 'f', -1, 64)
		case bool:
			out[k] = strconv.FormatBool(v)
		case []any:
			parts := make([]string, len(v))
			for i, p := range v {
				parts[i] = fmt.Sprint(p)
			}
			out[k] = strings.Join(parts, ",")
		default:
			return nil, fmt.Errorf("config: %s: %s: unsupported value %v", path, k, v)
		}
	}
	return out, nil
}

func parseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, p := range splitList(s) {
		d, err := time.ParseDuration(p)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// byteFlag declares a byte-count flag (parseBytes) that sets *v.
func byteFlag(fs *flag.FlagSet, v *int64, name, usage string) {
	fs.Func(name, usage, func(s string) error {
		n, err := parseBytes(s)
		if err == nil {
			*v = n
		}
		return err
	})
}

// parseBytes parses a byte count: a whole number, optionally with a unit
// (KiB, MiB, GiB, TiB; a space before it is allowed).
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	num, shift := s, 0
	for i, unit := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if n, ok := strings.CutSuffix(s, unit); ok {
			num, shift = strings.TrimSpace(n), 10*(i+1)
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("want a byte count such as 1048576, 512KiB, 100MiB or 10GiB, got %q", s)
	}
	return n << shift, nil
}

// parseDays parses a Go duration, or a whole number of days such as "30d"
// (time.ParseDuration has no day unit, and retention is counted in days).
func parseDays(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 {
			return 0, fmt.Errorf("want a duration such as 30d or 720h, got %q", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}
