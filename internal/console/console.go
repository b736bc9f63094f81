// Package console is Postline's web console: server-rendered pages over
// the same services as the HTTP API (never the API over the network),
// served by `postline serve` on the API's listener for paths outside /api/
// and /t/. It owns sign-in, sessions and CSRF; every rule about domains,
// keys and messages stays in the services.
//
// Security: a session is a random token in an HttpOnly, SameSite=Strict
// cookie (Secure over TLS or an https public URL), stored hashed; every
// POST carries the session's CSRF token and must not come from another
// origin (Origin / Sec-Fetch-Site); pages are sent with a Content Security
// Policy that allows no inline script and no framing; html/template
// escapes every value.
package console

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"github.com/postline/postline/internal/templates"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/audit"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/logexport"
	"github.com/postline/postline/internal/ratelimit"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/validation"
	"github.com/postline/postline/internal/webhook"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config configures the console.
type Config struct {
	// SecureCookies marks the session cookie Secure (TLS, or an https
	// public URL in front).
	SecureCookies bool
	Logger        *slog.Logger
	// ValidationPerHour is the account's validation budget, shared with
	// the API (--rate-validation-per-hour).
	ValidationPerHour int
	// DomainPerMinute is the account's budget of requests to domain
	// endpoints, shared with the API (--rate-domain-per-minute): the test
	// message counts against it.
	DomainPerMinute int
	// PublicURL is where browsers reach the console (--public-url), for
	// the invitation links; "" uses the request's host.
	PublicURL string
	Now       func() time.Time
}

// Deps are the services the pages use.
type Deps struct {
	Accounts *account.Service
	Sessions *account.Sessions
	// Team is the accounts' members; Audit who did what (nil: nothing is
	// recorded).
	Team    *account.Team
	Audit   *audit.Service
	Domains *domain.Service
	Events  *event.Service
	// LogExports writes the log as a file (the log page's export).
	LogExports *logexport.Exporter
	// Suppressions is the domains' lists.
	Suppressions *suppression.Service
	Webhooks     *webhook.Service
	Templates    *templates.Service
	Sending      *sending.Service // a message's state, cancelling
	Queue        *sending.Queue
	Validator    *validation.Validator
	Limiter      *ratelimit.Limiter
	Series       Series // hourly counts for the overview; nil: no charts
	Jobs         *validation.Jobs
	Attempts     *ratelimit.Attempts // failed sign-ins per login and address
	// Receiving keeps the messages routes stored for inbound domains.
	Receiving *receiving.Service
	// Stats is the hourly counts by stat key behind the analytics page;
	// nil: the page shows no figures.
	Stats Stats
	// Copies rebuilds a sent message's copy for its page (the worker);
	// nil: pages show no content.
	Copies Rebuilder
	// WebhookTester posts a webhook's test event (the dispatcher); nil:
	// the button says this server does not post.
	WebhookTester WebhookTester
}

// WebhookTester posts a made-up event to a webhook and reports the
// endpoint's status and, when it failed, why (*webhook.Dispatcher).
type WebhookTester interface {
	Test(ctx context.Context, w webhook.Webhook) (int, string)
}

// Console serves the pages.
type Console struct {
	cfg    Config
	deps   Deps
	pages  map[string]*template.Template
	assets map[string]asset // by hashed name
	css    string           // the stylesheet's hashed path
	js     string           // the script's hashed path
	mux    *http.ServeMux
	// streams ends with StopStreams: the live tails watch it besides their
	// request, which a server's Shutdown does not cancel.
	streams     context.Context
	stopStreams context.CancelFunc
}

type asset struct {
	body        []byte
	contentType string
}

// New builds the console.
func New(cfg Config, deps Deps) (*Console, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Console{cfg: cfg, deps: deps, pages: map[string]*template.Template{}, assets: map[string]asset{}}
	c.streams, c.stopStreams = context.WithCancel(context.Background())
	if err := c.loadAssets(); err != nil {
		return nil, err
	}
	funcs := template.FuncMap{"css": func() string { return c.css }, "js": func() string { return c.js },
		"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) }, "join": strings.Join, "inc": func(n int) int { return n + 1 },
		"num": anyNum, "fields": detailFields, "badge": badgeClass,
		"mxhost": func() string {
			if c.deps.Domains == nil {
				return ""
			}
			return c.deps.Domains.InboundMXHost()
		}}
	for _, name := range []string{"signin", "overview", "domains", "domain", "notfound", "log", "chain", "keys", "suppressions", "webhooks", "admin", "validation", "job", "templates", "template", "inboundlist", "inbound", "analytics", "members", "join", "audit"} {
		files := []string{"templates/layout.html", "templates/details.html", "templates/" + name + ".html"}
		if name == "templates" || name == "template" {
			files = append(files, "templates/templatefields.html")
		}
		if name == "inbound" || name == "chain" {
			files = append(files, "templates/mailparts.html")
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, files...)
		if err != nil {
			return nil, err
		}
		c.pages[name] = t
	}
	c.mux = http.NewServeMux()
	for _, rt := range c.routes() {
		c.mux.Handle(rt.pattern, rt.handler)
	}
	return c, nil
}

// loadAssets names each static file after its content's hash, so that it
// can be cached for ever and a new version has a new name.
func (c *Console) loadAssets() error {
	return fs.WalkDir(staticFS, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFS.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		base := strings.TrimPrefix(path, "static/")
		ext := base[strings.LastIndexByte(base, '.'):]
		hashed := "/static/" + strings.TrimSuffix(base, ext) + "." + hex.EncodeToString(sum[:6]) + ext
		ct := "application/octet-stream"
		switch ext {
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".js":
			ct = "text/javascript; charset=utf-8"
		}
		c.assets[hashed] = asset{body: b, contentType: ct}
		switch base {
		case "console.css":
			c.css = hashed
		case "console.js":
			c.js = hashed
		}
		return nil
	})
}

// ServeHTTP implements http.Handler with the security headers every
// answer carries.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	c.mux.ServeHTTP(w, r)
}

func (c *Console) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 30*time.Second)
}
