package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/stats"
)

// Mailgun's tags API over the domains' tags (package stats): the tags
// sends carried (o:tag), with first and last use and a description, and
// each tag's stats as the domain's.

const (
	mgTagsDefault = 100
	mgTagsMax     = 1000
)

// mgTagAlt takes METHOD /v3/{domain}/tags/{tag} from the route of
// METHOD /v3/{domain}/{list}/{address}, which also matches it.
func (s *Server) mgTagAlt(method, scope string, h authedHandler) alt {
	return alt{route: route{method: method, path: "/v3/{domain}/tags/{tag}", group: groupMailgun, scope: scope, handler: h},
		take: func(r *http.Request) bool {
			if r.PathValue("list") != "tags" {
				return false
			}
			r.SetPathValue("tag", r.PathValue("address"))
			return true
		}}
}

// mgTagStatsAlt takes GET /v3/{domain}/tags/{tag}/stats from the general
// GET /v3/{domain}/{kind}/{name}/{sub}.
func (s *Server) mgTagStatsAlt() alt {
	return alt{route: s.mgTagStatsRoute(), take: func(r *http.Request) bool {
		if r.PathValue("kind") != "tags" || r.PathValue("sub") != "stats" {
			return false
		}
		r.SetPathValue("tag", r.PathValue("name"))
		return true
	}}
}

// mgTagStatsWebhookAlt takes GET /v3/domains/tags/webhooks/stats (the
// stats of tag "webhooks" of a domain named "domains") from the webhook
// route that also matches it.
func (s *Server) mgTagStatsWebhookAlt() alt {
	return alt{route: s.mgTagStatsRoute(), take: func(r *http.Request) bool {
		if r.PathValue("domain") != "tags" || r.PathValue("id") != "stats" {
			return false
		}
		r.SetPathValue("domain", "domains")
		r.SetPathValue("tag", "webhooks")
		return true
	}}
}

func (s *Server) mgTagStatsRoute() route {
	return route{method: "GET", path: "/v3/{domain}/tags/{tag}/stats", group: groupMailgun, scope: account.ScopeLogRead,
		handler: s.handleMGTagStats}
}

// mgTag is a tag in Mailgun's shape; dates RFC 3339, which Mailgun's
// SDKs parse (JavaScript's Date, Go's time.Time).
func mgTag(t stats.Tag) map[string]any {
	return map[string]any{"tag": t.Name, "description": t.Description,
		"first-seen": t.FirstSeen.UTC().Format(time.RFC3339), "last-seen": t.LastSeen.UTC().Format(time.RFC3339)}
}

// mgTagPage reads limit (1 to 1000, default 100), page (first, last,
// next, prev), the pivot (tag, as Mailgun's paging URLs name it, or p)
// and prefix.
func mgTagPage(q url.Values) (stats.TagPage, error) {
	fe := apperr.FieldErrors{}
	for name := range q {
		switch name {
		case "limit", "page", "tag", "p", "prefix":
		default:
			fe.Add(name, "Unknown parameter "+strconv.Quote(name)+".")
		}
	}
	p := stats.TagPage{Limit: mgTagsDefault, Pivot: q.Get("tag"), Prefix: q.Get("prefix")}
	if p.Pivot == "" {
		p.Pivot = q.Get("p")
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > mgTagsMax {
			fe.Add("limit", fmt.Sprintf("The limit must be 1 to %d.", mgTagsMax))
		}
		p.Limit = n
	}
	switch q.Get("page") {
	case "", "first":
	case "next":
		p.Dir = stats.Next
	case "prev", "previous":
		p.Dir = stats.Prev
	case "last":
		p.Dir = stats.Last
	default:
		fe.Add("page", "The page must be first, last, next or prev.")
	}
	return p, fe.Err()
}

// handleMGTags is GET /v3/{domain}/tags: a page of tags by name.
func (s *Server) handleMGTags(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	page, err := mgTagPage(r.URL.Query())
	if err != nil {
		return err
	}
	list, err := s.Stats.Tags(r.Context(), d.ID, page)
	if err != nil {
		return err
	}
	items := make([]map[string]any, len(list))
	for i, t := range list {
		items[i] = mgTag(t)
	}
	// next goes on after this page's last tag, previous back from its
	// first; an empty page keeps the pivot it was asked with.
	next, prev := page.Pivot, page.Pivot
	if len(list) > 0 {
		next, prev = list[len(list)-1].Name, list[0].Name
	}
	base := s.publicBase(r) + "/v3/" + d.Name + "/tags"
	link := func(which, pivot string) string {
		v := url.Values{"limit": {strconv.Itoa(page.Limit)}, "page": {which}}
		if pivot != "" {
			v.Set("tag", pivot)
		}
		if page.Prefix != "" {
			v.Set("prefix", page.Prefix)
		}
		return base + "?" + v.Encode()
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "paging": map[string]string{
		"first": link("first", ""), "last": link("last", ""), "next": link("next", next), "previous": link("prev", prev)}})
	return nil
}

// handleMGTag is GET /v3/{domain}/tags/{tag}.
func (s *Server) handleMGTag(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	t, err := s.Stats.Tag(r.Context(), d.ID, r.PathValue("tag"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mgTag(t))
	return nil
}

// handleMGTagUpdate is PUT /v3/{domain}/tags/{tag} with description.
func (s *Server) handleMGTagUpdate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	form, err := readMGWebhookForm(r, "description")
	if err != nil {
		return err
	}
	if _, err := s.Stats.Describe(r.Context(), d.ID, r.PathValue("tag"), form.Get("description")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "Tag updated"})
	return nil
}

// handleMGTagDelete is DELETE /v3/{domain}/tags/{tag}: the tag and its
// counts (the domain's own stats keep its messages).
func (s *Server) handleMGTagDelete(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	if err := s.Stats.DeleteTag(r.Context(), d.ID, r.PathValue("tag")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "Tag deleted"})
	return nil
}

// handleMGTagStats is GET /v3/{domain}/tags/{tag}/stats: the domain's
// stats of the tag's messages.
func (s *Server) handleMGTagStats(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	t, err := s.Stats.Tag(r.Context(), d.ID, r.PathValue("tag"))
	if err != nil {
		return err
	}
	q, err := mgStatsParams(r.URL.Query(), time.Now())
	if err != nil {
		return err
	}
	out, err := s.mgStats(r.Context(), []int64{d.ID}, t.Name, q)
	if err != nil {
		return err
	}
	out.fields["tag"], out.fields["description"] = t.Name, t.Description
	out.write(w)
	return nil
}
