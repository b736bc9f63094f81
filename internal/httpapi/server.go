// Package httpapi is Postline's HTTP interface: thin handlers over the
// capability services, one route table, and the one place where
// application errors become statuses and the document's two body shapes.
package httpapi

import (
	"context"
	"github.com/postline/postline/internal/templates"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/audit"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/inboundroute"
	"github.com/postline/postline/internal/logexport"
	"github.com/postline/postline/internal/ratelimit"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/spool"
	"github.com/postline/postline/internal/stats"
	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/tracking"
	"github.com/postline/postline/internal/validation"
	"github.com/postline/postline/internal/webhook"
)

// Limits are the per-account request budgets.
type Limits struct {
	ValidationPerHour int
	DomainPerMinute   int
	// MaxJSONBody bounds JSON request bodies (default 1 MiB).
	MaxJSONBody int64
	// ProbeBudget bounds all the mailbox probes of one request
	// (--validation-probe-request-budget; default 60s).
	ProbeBudget time.Duration
}

// Deps are the services the handlers call.
type Deps struct {
	Accounts *account.Service
	// Audit is the accounts' record of who did what (GET /api/audit).
	Audit   *audit.Service
	Domains *domain.Service
	// Suppressions is the suppression capability.
	Suppressions *suppression.Service
	// Events is the delivery log (list and stream endpoints).
	Events *event.Service
	// LogExports writes the log as a file (the export endpoint).
	LogExports *logexport.Exporter
	// Validator is the address validation pipeline.
	Validator *validation.Validator
	// Sending accepts transactional messages.
	Sending *sending.Service
	// Tracking answers open, click and unsubscribe URLs.
	Tracking *tracking.Service
	// Webhooks manages the domains' webhook endpoints.
	Webhooks *webhook.Service
	// Templates keeps the domains' message templates.
	Templates *templates.Service
	// Stats reads Mailgun's statistics and the domains' tags.
	Stats *stats.Service
	// InboundRoutes keeps the accounts' inbound routes.
	InboundRoutes *inboundroute.Service
	// Receiving keeps the messages routes stored for inbound domains.
	Receiving *receiving.Service
	// Copies rebuilds a sent message's copy (the raw endpoint); nil: 404.
	Copies Rebuilder
	// PublicURL is the service's public base URL (--public-url), for
	// absolute links in answers; "" uses the request's host.
	PublicURL string
	Limiter   *ratelimit.Limiter
	Limits    Limits
	DB        WriteProber
	Logger    *slog.Logger
	Registry  *prometheus.Registry // metrics are registered here; nil makes a private one
	// Jobs runs list-cleaning validation jobs.
	Jobs *validation.Jobs
	// Queue is the operator's view of the delivery queue (/api/admin/).
	Queue *sending.Queue
	// Console serves the web console for paths outside /api/ and /t/ (nil:
	// those are 404 like any unknown path).
	Console http.Handler
	// Spool receives multipart parts within the process's budgets, shared
	// with the other doors; nil: a private one with the default budgets in
	// the system's temporary directory.
	Spool *spool.Spool
}

// Server is the HTTP API.
type Server struct {
	Deps
	metrics *metrics
	ready   *readiness
	mux     *http.ServeMux
	handler http.Handler
	routes  []route
	// streamsCtx ends with StopStreams: log streams watch it besides
	// their request, which Shutdown does not cancel.
	streamsCtx  context.Context
	stopStreams context.CancelFunc
	openStreams streamCounter
	// summaries are the Mailgun summaries of finished validation jobs.
	summaries bulkSummaries
}

// New builds the server and its routes.
func New(d Deps) *Server {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	if d.Limits.MaxJSONBody == 0 {
		d.Limits.MaxJSONBody = 1 << 20
	}
	if d.Limits.ProbeBudget == 0 {
		d.Limits.ProbeBudget = time.Minute
	}
	if d.Spool == nil {
		d.Spool = spool.New(spool.Config{})
	}
	s := &Server{Deps: d, metrics: newMetrics(d.Registry), ready: &readiness{probe: d.DB, log: d.Logger}}
	s.streamsCtx, s.stopStreams = context.WithCancel(context.Background())
	s.routes = s.routeTable()
	mux := http.NewServeMux()
	s.mux = mux
	for _, rt := range s.routes {
		mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
	}
	// Mailgun's paths the table does not have answer in Mailgun's shape
	// (401 for bad credentials, else 404 or 405), never with the console.
	for _, prefix := range []string{"/v3", "/v3/", "/v4", "/v4/"} {
		mux.Handle(prefix, s.wrap(route{path: "unmatched " + prefix, group: groupMailgun, handler: s.handleMailgunNoRoute}))
	}
	fallback := route{path: "unmatched", group: groupPublic, public: s.handleNotFound}
	if d.Console != nil {
		fallback = route{path: "console", group: groupPublic, public: s.handleConsole, maxBody: 64 << 20} // list uploads
	}
	mux.Handle("/", s.wrap(fallback))
	s.handler = s.withRequestID(s.withTrackingHosts(mux))
	return s
}

// Handler returns the root handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Routes lists "METHOD /path" of every registered route, for the OpenAPI
// coverage test.
func (s *Server) Routes() []string {
	out := make([]string, 0, len(s.routes))
	for _, rt := range s.routes {
		out = append(out, rt.method+" "+rt.path)
		for _, a := range rt.alts {
			out = append(out, a.method+" "+a.path)
		}
	}
	return out
}

// HTTPServer returns an http.Server with sensible timeouts for h. There is
// no write timeout because the log stream is long-lived.
func HTTPServer(addr string, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       5 * time.Minute, // bounded uploads of up to 25 MiB on slow links
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
