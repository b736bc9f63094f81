package httpapi

import (
	"encoding/base64"
	"html/template"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/tracking"
)

// pixelGIF is a transparent 1×1 GIF.
var pixelGIF, _ = base64.StdEncoding.DecodeString("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")

func trackingClient(r *http.Request) tracking.Client {
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	return tracking.Client{IP: ip, UserAgent: r.UserAgent(), Probe: r.Method == http.MethodHead}
}

// noStore keeps proxies and mail clients from caching a tracking answer,
// so each open and click reaches the server.
func noStore(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-store, no-cache, must-revalidate, private, max-age=0")
	h.Set("Pragma", "no-cache")
	h.Set("Expires", "0")
	h.Set("Referrer-Policy", "no-referrer")
}

// trackingError answers unknown tokens with a plain 404 (a tracking URL is
// opened by a mail client or a browser, not an API client).
func trackingError(w http.ResponseWriter, err error) error {
	if apperr.CodeOf(err) != apperr.NotFound {
		return err
	}
	noStore(w)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, "This link is not valid.\n")
	return nil
}

func (s *Server) handleOpen(w http.ResponseWriter, r *http.Request) error {
	text := strings.TrimSuffix(r.PathValue("token"), ".gif")
	if err := s.Tracking.Open(r.Context(), text, trackingClient(r)); err != nil {
		return trackingError(w, err)
	}
	noStore(w)
	w.Header().Set("Content-Type", "image/gif")
	w.Write(pixelGIF)
	return nil
}

func (s *Server) handleClick(w http.ResponseWriter, r *http.Request) error {
	to, err := s.Tracking.Click(r.Context(), r.PathValue("token"), trackingClient(r))
	if err != nil {
		return trackingError(w, err)
	}
	noStore(w)
	http.Redirect(w, r, to, http.StatusFound)
	return nil
}

var unsubscribePage = template.Must(template.New("unsubscribe").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Unsubscribe</title><meta name="robots" content="noindex">
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}
button{font-size:1rem;padding:.6rem 1.2rem;cursor:pointer}</style></head><body>
{{if .Done}}<h1>You are unsubscribed</h1>
<p>{{.Recipient}} will no longer receive email from {{.Sender}}.</p>
{{else}}<h1>Unsubscribe</h1>
<p>Stop email from {{.Sender}} to {{.Recipient}}?</p>
<form method="post"><button type="submit" name="confirm" value="yes">Unsubscribe</button></form>
{{end}}</body></html>
`))

type unsubscribeView struct {
	Done              bool
	Recipient, Sender string
}

// handleUnsubscribePage shows a confirmation; it never unsubscribes, since
// link scanners and prefetchers follow GET links.
func (s *Server) handleUnsubscribePage(w http.ResponseWriter, r *http.Request) error {
	t, err := s.Tracking.Check(r.Context(), r.PathValue("token"))
	if err != nil {
		return trackingError(w, err)
	}
	return s.writeUnsubscribePage(w, unsubscribeView{Recipient: t.Recipient, Sender: t.Sender})
}

// handleUnsubscribe unsubscribes: RFC 8058 one-click (the mailbox
// provider POSTs List-Unsubscribe=One-Click) or the confirmation form.
func (s *Server) handleUnsubscribe(w http.ResponseWriter, r *http.Request) error {
	source := "link"
	if err := r.ParseForm(); err == nil && r.PostForm.Get("List-Unsubscribe") == "One-Click" {
		source = "one_click"
	}
	t, err := s.Tracking.Unsubscribe(r.Context(), r.PathValue("token"), source, trackingClient(r))
	if err != nil {
		return trackingError(w, err)
	}
	if source == "one_click" { // a mailbox provider, not a person: no page
		noStore(w)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "Unsubscribed.\n")
		return nil
	}
	return s.writeUnsubscribePage(w, unsubscribeView{Done: true, Recipient: t.Recipient, Sender: t.Sender})
}

func (s *Server) writeUnsubscribePage(w http.ResponseWriter, v unsubscribeView) error {
	noStore(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.Header().Set("X-Frame-Options", "DENY")
	return unsubscribePage.Execute(w, v)
}

// withTrackingHosts keeps a tenant's tracking domain to the tracking
// paths: the service answers on it (its CNAME points here), but the API
// and the operations endpoints stay on the service's own host names.
func (s *Server) withTrackingHosts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Tracking != nil && !strings.HasPrefix(r.URL.Path, "/t/") {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if ok, err := s.Tracking.IsTrackingHost(r.Context(), host); err == nil && ok {
				http.NotFound(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
