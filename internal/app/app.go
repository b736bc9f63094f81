// Package app wires Postline together: configuration → database → services
// → HTTP server. The binary's subcommands and the end-to-end tests build
// the same App, so what the tests exercise is what runs.
package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/members"
	"github.com/postline/postline/internal/templates"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/audit"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/egress"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/httpapi"
	"github.com/postline/postline/internal/inbound"
	"github.com/postline/postline/internal/inboundpost"
	"github.com/postline/postline/internal/inboundroute"
	"github.com/postline/postline/internal/logexport"
	"github.com/postline/postline/internal/ratelimit"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/shaping"
	"github.com/postline/postline/internal/spool"
	"github.com/postline/postline/internal/stats"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/submission"
	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/suspend"
	"github.com/postline/postline/internal/tlscert"
	"github.com/postline/postline/internal/tracking"
	"github.com/postline/postline/internal/validation"
	"github.com/postline/postline/internal/webhook"
)

// App is a running Postline: its stores and services.
type App struct {
	Config config.Config
	// Egress is the --egress-file's sources and pools; nil without one.
	Egress   *egress.Config
	Logger   *slog.Logger
	DB       *store.DB
	Resolver *dnsclient.Resolver
	Accounts *account.Service
	// Team is the accounts' console members; Audit their record of who
	// did what.
	Team    *account.Team
	Audit   *audit.Service
	Domains *domain.Service
	// Suppressions holds the bounce, unsubscribe and whitelist lists.
	Suppressions *suppression.Service
	// Events is the delivery log; LogExports writes it as files to
	// download, for the console and the API (one limit for both).
	Events     *event.Service
	LogExports *logexport.Exporter
	// Sending accepts messages; Worker delivers them (serve only).
	Sending *sending.Service
	Worker  *sending.Worker
	// copies builds message copies for the console and the API, bounded
	// (--message-rebuilds).
	copies *sending.BoundedRebuilds
	// Tracking answers tracking URLs; TrackingURLs makes them.
	Tracking       *tracking.Service
	TrackingURLs   *tracking.URLs
	TrackingSigner tracking.Signer
	// Inbound takes bounce reports by SMTP (serve only; nil when off).
	Inbound *inbound.Server
	// Templates keeps the domains' stored message templates.
	Templates *templates.Service
	// Routes keeps the accounts' inbound routes (Mailgun's Routes).
	Routes *inboundroute.Service
	// Receiving takes mail for inbound domains and keeps what routes
	// store (receiving.go).
	Receiving *receiving.Service
	// Queue is the operator's view and control of the delivery queue;
	// Suspensions are the holds it puts on it (queue.go).
	Queue       *sending.Queue
	Suspensions *suspend.Service
	// Automation carries out the shaping files' automation rules through
	// the suspensions (automation.go).
	Automation *sending.Automation
	// Webhooks manages webhook endpoints; the dispatcher posts to them (serve only).
	Webhooks   *webhook.Service
	dispatcher *webhook.Dispatcher
	// inboundPosts posts routes' forwards to URLs and store
	// notifications (serve only; receiving.go).
	inboundPosts *inboundpost.Dispatcher
	probeOnce    sync.Once
	probes       *prometheus.CounterVec
	// transport is delivery's, once sending is open: mailbox probes take
	// its per-egress-path connection slots.
	transport atomic.Pointer[delivery.Transport]
	// members splits the provider_* shaping limits between the processes
	// delivering from the database.
	members *members.Registry
	// shaping holds the traffic-shaping rules delivery enforces, once
	// serve started (shaping.go).
	shaping atomic.Pointer[shaping.Watcher]
	// Validator is the address validation pipeline.
	Validator *validation.Validator
	lists     *validation.FileLists
	// bounceHistory is the validation's in-memory bounce history, and
	// historyCopy its copy of the lists (listfollow.go).
	bounceHistory *validation.History
	historyCopy   *suppression.ListCopy
	// keyIndex is the intake's in-memory index of list keys (listfollow.go).
	keyIndex *suppression.KeyIndex
	// ListFollower keeps bounceHistory and keyIndex current (started by
	// Serve; benchmarks that serve the API without Serve start it too).
	ListFollower *suppression.ListFollower
	Limiter      *ratelimit.Limiter
	Registry     *prometheus.Registry
	// ValidationJobs is the list-cleaning service (run by Serve).
	ValidationJobs *validation.Jobs
	// Submission is the SMTP submission service, once Serve started it
	// (nil when no submission listener is configured).
	Submission *submission.Server
	// Spool receives the bodies of every door (SMTP submission, inbound,
	// the HTTP API's multipart parts) within the process's budgets.
	Spool *spool.Spool

	// SecretKey seals DKIM keys, relay passwords and webhook secrets, and
	// derives the tracking and VERP keys.
	SecretKey []byte

	opts    Options
	closers []func() error
}

// Options tune Open for commands and tests.
type Options struct {
	// DKIMKeyBits overrides the 2048-bit default (tests use 1024 for speed).
	DKIMKeyBits int
	// Command names the command that opens the app ("serve", "domain add"),
	// for the record of where the secret key was first used.
	Command string
	// Now is the clock of sending (intake, the queue's due times, the
	// worker); nil is time.Now. Tests move it to reach a scheduled time.
	Now func() time.Time
	// RootCAs are the trust roots of outbound TLS (relays, MX hosts under
	// a TLS policy, MTA-STS policy hosts); nil is the system's, which Go
	// reads from SSL_CERT_FILE when set. Tests give their CA.
	RootCAs *x509.CertPool
}

// Open opens the database, applies migrations and builds the services.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger, opts Options) (*App, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a := &App{Config: cfg, Logger: log, Registry: prometheus.NewRegistry(), opts: opts}
	if err := a.open(ctx, opts); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

func (a *App) open(ctx context.Context, opts Options) error {
	cfg := a.Config
	db, err := store.Open(ctx, cfg.Database())
	if err != nil {
		return err
	}
	a.DB = db
	a.closers = append(a.closers, db.Close)
	a.Spool = a.newSpool()
	for name, pool := range db.Pools() {
		// go_sql_* series labelled db_name="writer" ...: open, idle, waits,
		// and connections closed for idleness (a pool too small churns).
		a.Registry.MustRegister(collectors.NewDBStatsCollector(pool, name))
	}
	a.Registry.MustRegister(newQueueCollector(db))
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	key, err := a.openKey(ctx)
	if err != nil {
		return err
	}
	a.SecretKey = key
	box, err := secret.NewBox(key)
	if err != nil {
		return err
	}
	observe := dnsMetrics(a.Registry)
	if a.Resolver, err = dnsclient.New(dnsclient.Config{Server: cfg.DNSServer, Observe: observe}); err != nil {
		return err
	}
	// Verification bypasses the answer cache: an owner who just published
	// a record must not be told it is missing for a negative TTL.
	uncached, err := dnsclient.New(dnsclient.Config{Server: cfg.DNSServer, CacheSize: -1, Observe: observe})
	if err != nil {
		return err
	}
	if cfg.EgressFile != "" {
		if a.Egress, err = egress.Load(cfg.EgressFile); err != nil {
			return err
		}
	}
	a.Accounts = account.NewService(store.NewAccounts(db), nil)
	a.Accounts.SetPasswordCheckConcurrency(a.Config.PasswordCheckConcurrency)
	a.Accounts.SetPoolCheck(a.Egress.HasPool)
	a.Team = account.NewTeam(a.Accounts, store.NewTeam(db), account.TeamConfig{MaxMembers: cfg.MembersPerAccount,
		MaxPending: cfg.MemberInvitesPerAccount})
	a.Audit = audit.NewService(store.NewAudit(db), nil, a.Logger)
	a.Domains = domain.NewService(store.NewDomains(db, box), uncached, domain.Config{
		RelayAllowlist: cfg.RelayAllowlist,
		SPFRecord:      cfg.SPFRecord,
		PublicHost:     publicHost(cfg.PublicURL), // a name only: CNAMEs point at it
		InboundMXHost:  cfg.EffectiveInboundMXHost(),
		ServiceHosts:   []string{listenHost(cfg.Addr)},
		DKIMKeyBits:    opts.DKIMKeyBits,
		ClaimTTL:       cfg.DomainClaimTTL,
		OwnedCacheTTL:  time.Second, // another process's change is seen within it
		HasPool:        a.Egress.HasPool,
		Logger:         a.Logger,
		Metrics:        domain.NewMetrics(a.Registry),
	})
	a.Suppressions = suppression.NewService(store.NewSuppressions(db), nil)
	a.keyIndex = suppression.NewKeyIndex(db.SuppressionWrites)
	db.OnSuppressionWrite(a.keyIndex.Note)
	a.Suppressions.UseIndex(a.keyIndex) // not ready, so unused, until serve loads it
	a.Events = event.NewService(store.NewEvents(db), event.Config{})
	a.LogExports = logexport.New(a.Events, logexport.Config{PerAccount: cfg.LogExportsPerAccount, Logger: a.Logger})
	if err := a.openValidator(); err != nil {
		return err
	}
	a.openListFollower()
	counter, err := a.rateCounter(ctx)
	if err != nil {
		return err
	}
	if _, local := counter.(*ratelimit.Memory); local {
		a.Limiter = ratelimit.New(counter, nil)
	} else {
		a.Limiter = ratelimit.NewLeasing(counter, nil) // shared: runs of numbers, not a round trip a request
	}
	a.openValidationJobs()
	a.openWebhooks(box)
	a.Templates = templates.NewService(store.NewTemplates(db), nil)
	a.Routes = inboundroute.NewService(store.NewInboundRoutes(db), nil)
	a.openReceiving()
	if err := a.openTracking(key); err != nil {
		return err
	}
	// Sending takes the outbound budget from the limiter, so it comes after it.
	if err := a.openSending(key, box); err != nil {
		return err
	}
	a.openQueueControl()
	return nil
}

func (a *App) rateCounter(ctx context.Context) (ratelimit.Counter, error) {
	switch a.Config.EffectiveRateStore() {
	case "database":
		return store.NewRateCounter(a.DB), nil
	case "redis":
		r, err := ratelimit.NewRedis(ctx, a.Config.RedisURL, "postline:rl:")
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, r.Close)
		return r, nil
	default:
		return ratelimit.NewMemory(), nil
	}
}

func listenHost(addr string) string {
	h, _, _ := net.SplitHostPort(addr)
	return h
}

// publicHost is the host of the public URL when it is a name ("" for none,
// or an IP address: a CNAME cannot point at one).
func publicHost(u string) string {
	p, err := url.Parse(u)
	if err != nil || net.ParseIP(p.Hostname()) != nil {
		return ""
	}
	return p.Hostname()
}

// Close releases everything Open acquired.
func (a *App) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i]())
	}
	a.closers = nil
	return errors.Join(errs...)
}

// API builds the HTTP API over the app's services.
func (a *App) API() *httpapi.Server {
	return httpapi.New(httpapi.Deps{
		Console:       a.console(),
		Jobs:          a.ValidationJobs,
		Queue:         a.Queue,
		Accounts:      a.Accounts,
		Audit:         a.Audit,
		Domains:       a.Domains,
		Suppressions:  a.Suppressions,
		Events:        a.Events,
		LogExports:    a.LogExports,
		Sending:       a.Sending,
		Tracking:      a.Tracking,
		Webhooks:      a.Webhooks,
		Templates:     a.Templates,
		InboundRoutes: a.Routes,
		Receiving:     a.Receiving,
		Copies:        a.copies,
		Stats:         stats.NewService(store.NewStats(a.DB)),
		PublicURL:     a.Config.PublicURL,
		Validator:     a.Validator,
		Limiter:       a.Limiter,
		Limits: httpapi.Limits{
			ValidationPerHour: a.Config.RateValidationPerHour,
			DomainPerMinute:   a.Config.RateDomainPerMinute,
			ProbeBudget:       a.Config.ValidationProbeRequestBudget,
		},
		DB:       a.DB,
		Logger:   a.Logger,
		Registry: a.Registry,
		Spool:    a.Spool,
	})
}

// Serve answers HTTP on ln until ctx is cancelled, then lets in-flight
// requests finish for up to the configured shutdown timeout.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	a.sweepSpool()
	stopEvents, err := a.startEventServices(ctx)
	if err != nil {
		return err
	}
	defer stopEvents()
	stopLoops, err := a.startLoops(ctx)
	if err != nil {
		return err
	}
	defer stopLoops()
	if err := a.StartWorkers(ctx); err != nil {
		return err
	}
	a.dispatcher.Start(ctx)
	defer a.dispatcher.Stop()
	a.ValidationJobs.Start(ctx)
	defer a.ValidationJobs.Stop()
	stopSubmission, err := a.startSubmission()
	if err != nil {
		return err
	}
	if stopSubmission != nil {
		defer stopSubmission()
	}
	stopInbound, err := a.startInbound(ctx)
	if err != nil {
		return err
	}
	defer stopInbound()
	scheme := "http"
	ln = a.boundHTTP(ln)
	if a.Config.APITLS {
		certs, err := tlscert.New(a.Config.TLSCert, a.Config.TLSKey)
		if err != nil {
			return err
		}
		certs.OnError = func(err error) {
			a.Logger.Error("new TLS certificate not loaded; the previous one stays", "error", err)
		}
		tc := certs.Config()
		tc.NextProtos = []string{"http/1.1"}
		ln, scheme = tls.NewListener(ln, tc), "https"
	}
	api := a.API()
	srv := httpapi.HTTPServer(ln.Addr().String(), closeUnreadBodies(boundDB(api.Handler(), a.Config.DBTimeout)), a.Logger)
	srv.RegisterOnShutdown(api.StopStreams)
	srv.ConnState = httpConnState
	srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	a.Logger.Info("listening", "addr", ln.Addr().String(), "scheme", scheme, "database", redactURL(a.Config.Database()))
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.Logger.Info("shutting down", "timeout", a.Config.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), a.Config.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// boundDB bounds every database call of each request (--db-timeout): a
// frozen database makes requests answer 503, not hang. The mark is per
// request, so that one call's timeout ends that request's calls only.
func boundDB(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(store.WithCallTimeout(r.Context(), timeout)))
	})
}

func redactURL(s string) string {
	if i := strings.Index(s, "@"); i > 0 && strings.Contains(s[:i], "://") {
		scheme, _, _ := strings.Cut(s, "://")
		return scheme + "://…" + s[i:]
	}
	return s
}

// NewLogger builds the configured slog logger writing to w.
func NewLogger(cfg config.Config, w io.Writer) *slog.Logger {
	if w == nil {
		w = os.Stderr
	}
	var level slog.Level
	level.UnmarshalText([]byte(cfg.LogLevel)) //nolint:errcheck // validated by config
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openValidator builds the validation pipeline with the database cache,
// the operator lists (reloaded when their files change) and the bounce
// history of the suppression lists.
func (a *App) openValidator() error {
	lists, err := a.watchLists()
	if err != nil {
		return err
	}
	a.lists = lists
	a.Validator, err = a.NewValidator(ValidatorOptions{})
	return err
}

func (a *App) watchLists() (*validation.FileLists, error) {
	lists, err := validation.LoadFileLists(a.Config.BlocklistFile, a.Config.AllowlistFile)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.closers = append(a.closers, func() error { cancel(); return nil })
	go lists.Watch(ctx, 10*time.Second, func(changed bool, err error) {
		if err != nil {
			a.Logger.Warn("operator lists not reloaded", "error", err)
		} else {
			a.Logger.Info("operator lists reloaded")
		}
	})
	return lists, nil
}

// ValidatorOptions tune a validation pipeline for a command.
type ValidatorOptions struct {
	Offline     bool // no DNS, no cache
	Refresh     bool // ignore cached verdicts and replace them
	Concurrency int  // addresses at once; 0 for the default
}

// NewValidator builds a validation pipeline on the app's resolver, cache,
// lists and bounce history: the API's own, or a CLI's with its own
// options. Offline ones use no DNS and no shared cache.
func (a *App) NewValidator(o ValidatorOptions) (*validation.Validator, error) {
	cfg := validatorConfig(a.Config, a.lists, o)
	if a.bounceHistory == nil {
		a.bounceHistory = validation.NewHistory(a.Config.ValidationSharedHistory)
	}
	cfg.Bounces = a.bounceHistory
	if !o.Offline {
		cfg.Resolver, cfg.Cache = a.Resolver, store.NewValidationCache(a.DB)
		if cfg.Probe != nil {
			cfg.Probe.Observe, cfg.Probe.Slots, cfg.Probe.Logger = a.probeMetric(), mxSlots{a}, a.Logger
		}
	}
	return validation.New(cfg)
}

// probeConfig permits mailbox probes when the operator turned them on.
func probeConfig(c config.Config) *validation.ProbeConfig {
	if !c.ValidationSMTPProbe {
		return nil
	}
	return &validation.ProbeConfig{Helo: c.ValidationHelo, MailFrom: c.ValidationMailFrom, Port: c.MXPort,
		AllowPrivate: c.ValidationProbeAllowPrivate, Timeout: c.ValidationProbeTimeout, CacheTTL: c.ValidationProbeCacheTTL,
		CatchAllTTL: c.ValidationCatchAllTTL}
}

// StandaloneValidator builds a pipeline from the settings alone, opening
// no database: offline, or with DNS but without the shared cache and
// bounce history.
func StandaloneValidator(cfg config.Config, o ValidatorOptions) (*validation.Validator, error) {
	lists, err := validation.LoadFileLists(cfg.BlocklistFile, cfg.AllowlistFile)
	if err != nil {
		return nil, err
	}
	vc := validatorConfig(cfg, lists, o)
	if !o.Offline {
		if vc.Resolver, err = dnsclient.New(dnsclient.Config{Server: cfg.DNSServer}); err != nil {
			return nil, err
		}
	}
	return validation.New(vc)
}

func validatorConfig(cfg config.Config, lists *validation.FileLists, o ValidatorOptions) validation.Config {
	return validation.Config{
		Lists:             lists,
		CacheTTL:          cfg.ValidationCacheTTL,
		SpamtrapThreshold: cfg.SpamtrapThreshold,
		Concurrency:       o.Concurrency,
		Offline:           o.Offline,
		Refresh:           o.Refresh,
		Probe:             probeConfig(cfg),
	}
}

// probeMetric counts mailbox probes by outcome
// (postline_validation_probes_total); registered once per App.
func (a *App) probeMetric() func(string) {
	a.probeOnce.Do(func() {
		a.probes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "postline_validation_probes_total",
			Help: "Mailbox probes by outcome (accepted, rejected, full, greylisted, temporary, refused, unavailable, private)."},
			[]string{"outcome"})
		a.Registry.MustRegister(a.probes)
	})
	return func(outcome string) { a.probes.WithLabelValues(outcome).Inc() }
}

// mxSlots hands mailbox probes delivery's per-egress-path connection
// slots (the validator is built before sending opens: the transport is
// looked up when a probe needs it).
type mxSlots struct{ a *App }

func (m mxSlots) MXSlot(ctx context.Context, domain string) (func(), error) {
	t := m.a.transport.Load()
	if t == nil {
		return func() {}, nil
	}
	return t.MXSlot(ctx, domain)
}
