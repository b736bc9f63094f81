package app

import (
	"context"
	"crypto/tls"
	"os"
	"runtime"
	"time"

	"github.com/postline/postline/internal/attach"
	"github.com/postline/postline/internal/attachproc"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/members"
	"github.com/postline/postline/internal/mtasts"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/store"
)

// openSending builds the intake service, the SMTP transport and the
// delivery worker. The worker runs only in `serve` (StartWorkers); the CLI
// never delivers.
func (a *App) openSending(secretKey []byte, box *secret.Box) error {
	cfg := a.Config
	// Policy fetches follow the recipient's DNS like deliveries do, so the
	// same guard (--delivery-allow-private) applies to both.
	sts, err := mtasts.New(mtasts.Config{Resolver: a.Resolver, Store: store.NewMTASTSPolicies(a.DB), Port: cfg.MTASTSPort,
		RootCAs: a.opts.RootCAs, AllowPrivate: cfg.DeliveryAllowPrivate, Logger: a.Logger})
	if err != nil {
		return err
	}
	a.members = members.New(members.Config{Store: store.NewMembers(a.DB), Now: a.opts.Now, Logger: a.Logger})
	// Closed after the transport (closers run last first): its share is
	// given up once its connections are.
	a.closers = append(a.closers, func() error { a.members.Stop(); return nil })
	t, err := delivery.New(delivery.Config{
		Shares:                  a.members,
		Resolver:                a.Resolver,
		MXPort:                  cfg.MXPort,
		HeloName:                cfg.HeloName,
		TLSConfig:               &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: a.opts.RootCAs},
		InsecureSkipRelayVerify: cfg.RelayTLSInsecure,
		AllowPrivate:            cfg.DeliveryAllowPrivate,
		RootCAs:                 a.opts.RootCAs,
		MTASTS:                  sts,
		Logger:                  a.Logger,
		Shaping:                 a.shapingRules,
		Egress:                  a.Egress,
		// Warm-up caps are per source per day whatever --rate-store says:
		// every process sending from an address must share its count.
		Warmup:    store.NewRateCounter(a.DB),
		Now:       a.opts.Now,
		Overrides: a.shapingOverrides,
		// A relay takes as many connections as there are workers to use
		// them (a site keeps the default 4).
		MaxConnsPerRelay: cfg.DeliveryWorkers,
	})
	if err != nil {
		return err
	}
	a.closers = append(a.closers, t.Close)
	a.transport.Store(t)
	st := store.NewSending(a.DB)
	a.Worker = sending.NewWorker(sending.WorkerConfig{
		Concurrency: cfg.DeliveryWorkers,
		Lease:       cfg.DeliveryLease,
		DomainRate:  cfg.DomainSendRate,
		Grace:       cfg.ShutdownTimeout,
		Policy:      sending.Policy{Schedule: cfg.RetrySchedule, MaxAge: cfg.MaxMessageAge, Jitter: retryJitter},
		VERPKey:     verpKey(secretKey),
		Tracking:    a.TrackingURLs,
		Logger:      a.Logger,
		Sealer:      box,
		Metrics:     sending.NewMetrics(a.Registry),
		Process:     a.attachProcessor(),
		Now:         a.opts.Now,
	}, st, a.Events, a.Domains, a.Suppressions, t, a.Limiter)
	a.Sending = sending.NewService(st, a.Events, a.Suppressions, sending.Config{Sealer: box, Now: a.opts.Now,
		Templates: a.Templates, MaxSchedule: cfg.ScheduleMaxAhead, EnqueueLinger: enqueueLinger(a.DB.Dialect),
		MaxRenderedBytes: cfg.MaxRenderedBytesPerRequest, Volume: a.Limiter, DailyBytes: cfg.AccountDailyBytes,
		CheckFiles: a.attachChecker()}, a.Worker.Wake)
	a.copies = &sending.BoundedRebuilds{Next: a.Worker, Total: a.Config.MessageRebuilds, PerDomain: 2}
	return nil
}

// StartWorkers puts the shaping rules in force and starts delivering
// queued mail until ctx ends or Close. A shaping file that does not load
// is an error.
func (a *App) StartWorkers(ctx context.Context) error {
	if err := a.Egress.CheckBind(); err != nil {
		return err
	}
	if err := a.startShaping(ctx); err != nil {
		return err
	}
	a.members.Start(ctx)
	if err := a.Worker.Start(ctx); err != nil {
		return err
	}
	a.closers = append(a.closers, func() error { a.Worker.Stop(); return nil })
	a.watchAutomation(ctx)
	return nil
}

// attachProcessor is the child-process runner of attachment processing
// (nil, in process, when isolation is off or the executable is unknown).
func (a *App) attachProcessor() func(context.Context, []attach.File, attach.Options) (attach.Result, error) {
	if !a.Config.AttachIsolation {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		a.Logger.Warn("attachments are processed in the server process: its executable is unknown", "error", err)
		return nil
	}
	return attachproc.Runner{Exe: exe, Memory: int64(a.Config.AttachMemoryMiB) << 20, Timeout: a.Config.AttachTimeout}.Process
}

// attachChecker runs the checks of a send's files before it is accepted
// in child processes too, at most one per CPU at once (each may take
// --attach-memory-limit); nil, in process, when isolation is off.
func (a *App) attachChecker() func(context.Context, []attach.File, attach.Options) error {
	if !a.Config.AttachIsolation {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil // attachProcessor has said why
	}
	return attachproc.Runner{Exe: exe, Memory: int64(a.Config.AttachMemoryMiB) << 20, Timeout: a.Config.AttachTimeout,
		Slots: make(chan struct{}, max(2, runtime.NumCPU()))}.Check
}

// enqueueLinger is how long a group of accepted requests waits for the
// ones arriving with it under concurrent load. SQLite commits one group at
// a time, each with an fsync, so larger groups carry more requests per
// commit (+10% intake at 8 clients); PostgreSQL commits groups in
// parallel, and measured no gain.
func enqueueLinger(d store.Dialect) time.Duration {
	if d == store.SQLite {
		return 200 * time.Microsecond
	}
	return 0
}

// retryJitter spreads retry delays by ±10%.
const retryJitter = 0.1
