package httpapi

import (
	"net/http"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/audit"
)

// group decides authentication, the rate-limit window and the error body
// shape of a route, as the interface document assigns them.
type group int

const (
	groupPublic     group = iota // no auth, no limit
	groupValidation              // {success,message}; per hour
	groupDomainLog               // log, stream, send: {error}; disabled account → 400
	groupDomain                  // suppressions and domain management: {success,message}; per minute
	groupDelete                  // the two DELETEs: 401 {error,message}, else {success,message}; per minute
	groupMailgun                 // /v3/: Mailgun's auth (api:KEY) and {message} errors, 400 for bad input; per minute
)

// alt is a route served under another's pattern when take, which may set
// the path values the alt's handler reads, accepts the request.
type alt struct {
	route
	take func(r *http.Request) bool
}

type authedHandler func(w http.ResponseWriter, r *http.Request, p account.Principal) error

type route struct {
	method, path string
	group        group
	handler      authedHandler
	public       func(w http.ResponseWriter, r *http.Request) error
	maxBody      int64 // 0 = Limits.MaxJSONBody
	// scope is what a key must hold to use the route ("" for public
	// routes); operator routes also need a key without limits.
	scope    string
	operator bool
	// alts are routes the mux cannot tell apart from this one: Go's
	// ServeMux refuses overlapping patterns (/v3/domains/{domain}/webhooks
	// and /v3/{domain}/tags/{tag} both match /v3/domains/tags/webhooks),
	// so such routes hang here, under the general pattern they also match.
	// The first alt that takes the request serves it; Routes lists them.
	alts []alt
	// faultsAsSuccess makes 500s use {success:false,message} in the
	// {error} group: the document gives the send endpoint that shape.
	faultsAsSuccess bool
	// hourly counts the route against the validation budget (per hour)
	// whatever its group: Mailgun's validation routes use Mailgun's auth
	// and errors but the budget of /api/email/validate.
	hourly bool
	// audit is the action a successful request records in the account's
	// audit log ("": none).
	audit string
}

func (s *Server) routeTable() []route {
	return []route{
		{method: "GET", path: "/healthz", public: s.handleHealthz},
		{method: "GET", path: "/readyz", public: s.handleReadyz},
		{method: "GET", path: "/metrics", public: s.handleMetrics},
		{method: "GET", path: "/api/openapi.json", public: s.handleOpenAPI},

		// Tracking URLs in sent messages: no account, the token is the credential.
		{method: "GET", path: "/t/o/{token}", public: s.handleOpen},
		{method: "GET", path: "/t/c/{token}", public: s.handleClick},
		{method: "GET", path: "/t/u/{token}", public: s.handleUnsubscribePage},
		{method: "POST", path: "/t/u/{token}", public: s.handleUnsubscribe, maxBody: 64 << 10},

		{method: "POST", path: "/api/email/validate", group: groupValidation, scope: account.ScopeValidate, handler: s.handleValidate},
		{method: "POST", path: "/api/email/validate/strict", group: groupValidation, scope: account.ScopeValidate, handler: s.handleValidateStrict},
		{method: "POST", path: "/api/email/validate/bulk/strict", group: groupValidation, scope: account.ScopeValidate, handler: s.handleValidateBulkStrict},

		// List cleaning: durable jobs. They count against the validation
		// budget per address as they run, so the requests themselves use
		// the per-minute budget.
		{method: "POST", path: "/api/email/validate/jobs", group: groupDomain, scope: account.ScopeValidate, handler: s.handleCreateValidationJob, maxBody: maxJobBody},
		{method: "GET", path: "/api/email/validate/jobs", group: groupDomain, scope: account.ScopeValidate, handler: s.handleListValidationJobs},
		{method: "GET", path: "/api/email/validate/jobs/{id}", group: groupDomain, scope: account.ScopeValidate, handler: s.handleGetValidationJob},
		{method: "GET", path: "/api/email/validate/jobs/{id}/results", group: groupDomain, scope: account.ScopeValidate, handler: s.handleValidationJobResults},
		{method: "DELETE", path: "/api/email/validate/jobs/{id}", group: groupDomain, scope: account.ScopeValidate, handler: s.handleCancelValidationJob},

		{method: "GET", path: "/api/domains/{domain}/log", group: groupDomainLog, scope: account.ScopeLogRead, handler: s.handleLogList},
		{method: "GET", path: "/api/domains/{domain}/log/stream", group: groupDomainLog, scope: account.ScopeLogRead, handler: s.handleLogStream},
		{method: "GET", path: "/api/domains/{domain}/log/export", group: groupDomainLog, scope: account.ScopeLogRead, handler: s.handleLogExport},

		{method: "DELETE", path: "/api/domains/{domain}/tracklink", group: groupDelete, scope: account.ScopeDomains, handler: s.handleRemoveTracking, audit: audit.DomainChanged},
		{method: "DELETE", path: "/api/domains/{domain}/auth-domain", group: groupDelete, scope: account.ScopeDomains, handler: s.handleRemoveAuthDomain, audit: audit.DomainChanged},
		{method: "PUT", path: "/api/domains/{domain}/tracklink", group: groupDomain, scope: account.ScopeDomains, handler: s.handleSetTracking, audit: audit.DomainChanged},
		{method: "PUT", path: "/api/domains/{domain}/auth-domain", group: groupDomain, scope: account.ScopeDomains, handler: s.handleSetAuthDomain, audit: audit.DomainChanged},
		{method: "PUT", path: "/api/domains/{domain}/tracking", group: groupDomain, scope: account.ScopeDomains, handler: s.handleSetTrackingOptions, audit: audit.DomainChanged},
		{method: "PATCH", path: "/api/domains/{domain}", group: groupDomain, scope: account.ScopeDomains, handler: s.handleUpdateDomain, audit: audit.DomainChanged},
		{method: "PATCH", path: "/api/domains/{domain}/delivery", group: groupDomain, scope: account.ScopeDomains, handler: s.handleSetDelivery, audit: audit.DomainChanged},
		{method: "PATCH", path: "/api/domains/{domain}/inbound", group: groupDomain, scope: account.ScopeDomains, handler: s.handleSetInbound, audit: audit.DomainChanged},

		// Received mail a route stored (inbound.go): scope domains, as the
		// routes that store it.
		{method: "GET", path: "/api/domains/{domain}/inbound", group: groupDomain, scope: account.ScopeDomains, handler: s.handleListInbound},
		{method: "GET", path: "/api/domains/{domain}/inbound/{id}", group: groupDomain, scope: account.ScopeDomains, handler: s.handleGetInbound},
		{method: "GET", path: "/api/domains/{domain}/inbound/{id}/raw", group: groupDomain, scope: account.ScopeDomains, handler: s.handleGetInboundRaw},
		{method: "GET", path: "/api/domains/{domain}/inbound/{id}/attachments/{n}", group: groupDomain, scope: account.ScopeDomains, handler: s.handleGetInboundAttachment},

		{method: "POST", path: "/api/domains/{domain}/message", group: groupDomainLog, scope: account.ScopeSend, handler: s.handleSend,
			maxBody: maxSendBody, faultsAsSuccess: true},

		{method: "GET", path: "/api/domains/{domain}/messages/{id}", group: groupDomain, scope: account.ScopeSend, handler: s.handleGetMessage},
		{method: "GET", path: "/api/domains/{domain}/messages/{id}/raw", group: groupDomain, scope: account.ScopeSend, handler: s.handleGetMessageRaw},
		{method: "DELETE", path: "/api/domains/{domain}/messages/{id}", group: groupDomain, scope: account.ScopeSend, handler: s.handleCancelMessage},

		{method: "POST", path: "/api/domains/{domain}/templates", group: groupDomain, scope: account.ScopeSend, handler: s.handleCreateTemplate, maxBody: maxTemplateBody, audit: audit.TemplateCreated},
		{method: "GET", path: "/api/domains/{domain}/templates", group: groupDomain, scope: account.ScopeSend, handler: s.handleListTemplates},
		{method: "GET", path: "/api/domains/{domain}/templates/{name}", group: groupDomain, scope: account.ScopeSend, handler: s.handleGetTemplate},
		{method: "PUT", path: "/api/domains/{domain}/templates/{name}", group: groupDomain, scope: account.ScopeSend, handler: s.handleUpdateTemplate, maxBody: maxTemplateBody, audit: audit.TemplateChanged},
		{method: "DELETE", path: "/api/domains/{domain}/templates/{name}", group: groupDomain, scope: account.ScopeSend, handler: s.handleDeleteTemplate, audit: audit.TemplateDeleted},
		{method: "POST", path: "/api/domains/{domain}/templates/{name}/render", group: groupDomain, scope: account.ScopeSend, handler: s.handleRenderTemplate},

		{method: "GET", path: "/api/domains/{domain}/suppressions", group: groupDomain, scope: account.ScopeSuppressions, handler: s.handleSuppressions},
		{method: "GET", path: "/api/domains/{domain}/suppressions/unsubscribes", group: groupDomain, scope: account.ScopeSuppressions, handler: s.handleUnsubscribes},
		{method: "POST", path: "/api/domains/{domain}/suppressions/whitelist", group: groupDomain, scope: account.ScopeSuppressions, handler: s.handleWhitelist, audit: audit.SuppressionAdded},
		{method: "DELETE", path: "/api/domains/{domain}/suppressions/{id}", group: groupDomain, scope: account.ScopeSuppressions, handler: s.handleDeleteSuppression, audit: audit.SuppressionRemoved},

		{method: "POST", path: "/api/domains/{domain}/webhooks", group: groupDomain, scope: account.ScopeWebhooks, handler: s.handleCreateWebhook, audit: audit.WebhookCreated},
		{method: "GET", path: "/api/domains/{domain}/webhooks", group: groupDomain, scope: account.ScopeWebhooks, handler: s.handleListWebhooks},
		{method: "DELETE", path: "/api/domains/{domain}/webhooks/{id}", group: groupDomain, scope: account.ScopeWebhooks, handler: s.handleDeleteWebhook, audit: audit.WebhookDeleted},
		{method: "GET", path: "/api/domains/{domain}/webhooks/{id}/posts", group: groupDomain, scope: account.ScopeWebhooks, handler: s.handleWebhookPosts},

		// The operator's: accounts and the queue across every domain (403 for
		// other accounts).
		{method: "GET", path: "/api/admin/accounts", group: groupDomain, operator: true, handler: admin(s.handleAdminAccounts)},
		{method: "POST", path: "/api/admin/accounts", group: groupDomain, operator: true, handler: admin(s.handleAdminCreateAccount)},
		{method: "PATCH", path: "/api/admin/accounts/{login}", group: groupDomain, operator: true, handler: admin(s.handleAdminUpdateAccount)},
		{method: "POST", path: "/api/admin/accounts/{login}/disable", group: groupDomain, operator: true, handler: admin(s.handleAdminDisable)},
		{method: "POST", path: "/api/admin/accounts/{login}/enable", group: groupDomain, operator: true, handler: admin(s.handleAdminEnable)},
		{method: "GET", path: "/api/admin/accounts/{login}/keys", group: groupDomain, operator: true, handler: admin(s.handleAdminKeys)},
		{method: "POST", path: "/api/admin/accounts/{login}/keys", group: groupDomain, operator: true, handler: admin(s.handleAdminCreateKey)},
		{method: "GET", path: "/api/admin/queue", group: groupDomain, operator: true, handler: admin(s.handleAdminQueue)},
		{method: "POST", path: "/api/admin/queue/retry", group: groupDomain, operator: true, handler: admin(s.handleAdminRetry)},
		{method: "POST", path: "/api/admin/queue/bounce", group: groupDomain, operator: true, handler: admin(s.handleAdminBounce)},
		{method: "GET", path: "/api/admin/queue/suspensions", group: groupDomain, operator: true, handler: admin(s.handleAdminSuspensions)},
		{method: "POST", path: "/api/admin/queue/suspensions", group: groupDomain, operator: true, handler: admin(s.handleAdminSuspend)},
		{method: "DELETE", path: "/api/admin/queue/suspensions/{id}", group: groupDomain, operator: true, handler: admin(s.handleAdminResume)},
		{method: "GET", path: "/api/admin/shaping", group: groupDomain, operator: true, handler: admin(s.handleAdminShaping)},

		// Inbound routes, the account's (inboundroutes.go): scope domains,
		// and a key not limited to domains since a route applies to all.
		{method: "POST", path: "/api/routes", group: groupDomain, scope: account.ScopeDomains, handler: s.handleCreateRoute},
		{method: "GET", path: "/api/routes", group: groupDomain, scope: account.ScopeDomains, handler: s.handleListRoutes},
		{method: "GET", path: "/api/routes/{id}", group: groupDomain, scope: account.ScopeDomains, handler: s.handleGetRoute},
		{method: "PUT", path: "/api/routes/{id}", group: groupDomain, scope: account.ScopeDomains, handler: s.handleUpdateRoute},
		{method: "DELETE", path: "/api/routes/{id}", group: groupDomain, scope: account.ScopeDomains, handler: s.handleDeleteRoute},

		{method: "GET", path: "/api/keys", group: groupDomain, scope: account.ScopeKeys, handler: s.handleListKeys},
		{method: "GET", path: "/api/audit", group: groupDomain, scope: account.ScopeKeys, handler: s.handleAudit},
		{method: "POST", path: "/api/keys", group: groupDomain, scope: account.ScopeKeys, handler: s.handleCreateKey, audit: audit.KeyCreated},
		{method: "DELETE", path: "/api/keys/{id}", group: groupDomain, scope: account.ScopeKeys, handler: s.handleRevokeKey, audit: audit.KeyRevoked},

		// Mailgun's v3 API over the same services (mailgun.go).
		{method: "POST", path: "/v3/{domain}/messages", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMailgunSend, maxBody: maxSendBody},
		{method: "POST", path: "/v3/{domain}/messages.mime", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMailgunMIME, maxBody: maxSendBody},
		{method: "GET", path: "/v3/{domain}/events", group: groupMailgun, scope: account.ScopeLogRead, handler: s.handleMailgunEvents,
			alts: []alt{s.mgRouteAlt("GET", s.handleMGRoute, literal("events"))}},
		{method: "GET", path: "/v3/{domain}/events/{token}", group: groupMailgun, scope: account.ScopeLogRead, handler: s.handleMailgunEvents},
		{method: "GET", path: "/v3/domains", group: groupMailgun, scope: account.ScopeDomains, handler: s.handleMailgunDomains},
		// Mailgun's validation (mailgun_validate.go).
		{method: "GET", path: "/v4/address/validate", group: groupMailgun, scope: account.ScopeValidate, handler: s.handleMailgunValidate, hourly: true},
		{method: "POST", path: "/v4/address/validate", group: groupMailgun, scope: account.ScopeValidate, handler: s.handleMailgunValidate, hourly: true},
		// Bulk: the requests use the per-minute budget; each address counts
		// against the validation budget as the job runs (mailgun_bulk.go).
		{method: "POST", path: "/v4/address/validate/bulk/{list_id}", group: groupMailgun, scope: account.ScopeValidate, handler: s.handleMailgunBulkCreate, maxBody: maxJobBody},
		{method: "GET", path: "/v4/address/validate/bulk", group: groupMailgun, scope: account.ScopeValidate, handler: s.handleMailgunBulkList},
		{method: "GET", path: "/v4/address/validate/bulk/{list_id}", group: groupMailgun, scope: account.ScopeValidate, handler: s.handleMailgunBulkGet},
		{method: "DELETE", path: "/v4/address/validate/bulk/{list_id}", group: groupMailgun, scope: account.ScopeValidate, handler: s.handleMailgunBulkDelete},
		{method: "GET", path: "/v4/address/validate/bulk/{list_id}/{file}", group: groupMailgun, scope: account.ScopeValidate, handler: s.handleMailgunBulkResults},
		{method: "GET", path: "/v4/domains", group: groupMailgun, scope: account.ScopeDomains, handler: s.handleMailgunDomains},
		{method: "GET", path: "/v4/domains/{name}", group: groupMailgun, scope: account.ScopeDomains, handler: s.handleMailgunDomain},
		// GET /v3/domains/{name} would conflict with /v3/{domain}/events in
		// the mux (both match /v3/domains/events): the list route hands it on.
		{method: "GET", path: "/v3/{domain}/{list}", group: groupMailgun, scope: account.ScopeSuppressions, handler: s.handleMailgunList,
			alts: []alt{s.mailgunDomainRoute(), s.mgRouteAlt("GET", s.handleMGRoute, pathValue("list"))}},
		{method: "POST", path: "/v3/{domain}/{list}", group: groupMailgun, scope: account.ScopeSuppressions, handler: s.handleMailgunListAdd},
		{method: "DELETE", path: "/v3/{domain}/{list}", group: groupMailgun, scope: account.ScopeSuppressions, handler: s.handleMailgunListClear,
			alts: []alt{s.mgRouteAlt("DELETE", s.handleMGRouteDelete, pathValue("list"))}},
		// The dispatch point of GET /v3/{a}/{b}/{c}: patterns of three
		// segments after /v3/ that overlap each other go in alts here
		// (/v3/{domain}/tags/{tag} after the webhooks).
		{method: "GET", path: "/v3/{domain}/{list}/{address}", group: groupMailgun, scope: account.ScopeSuppressions, handler: s.handleMailgunListGet,
			alts: []alt{s.mailgunWebhooksRoute(), s.mgTagAlt("GET", account.ScopeLogRead, s.handleMGTag)}},
		{method: "DELETE", path: "/v3/{domain}/{list}/{address}", group: groupMailgun, scope: account.ScopeSuppressions, handler: s.handleMailgunListDelete,
			alts: []alt{s.mgTagAlt("DELETE", account.ScopeSend, s.handleMGTagDelete)}},

		// Mailgun's domain webhooks (mailgun_webhooks.go); GET of the list
		// is an alt of GET /v3/{domain}/{list}/{address} above. GET
		// /v3/{domain}/tags/{tag}/stats overlaps the GET of one id and is
		// dispatched likewise.
		{method: "POST", path: "/v3/domains/{domain}/webhooks", group: groupMailgun, scope: account.ScopeWebhooks, handler: s.handleMailgunWebhookCreate},
		{method: "GET", path: "/v3/domains/{domain}/webhooks/{id}", group: groupMailgun, scope: account.ScopeWebhooks, handler: s.handleMailgunWebhookGet,
			alts: []alt{s.mgTemplateVersionsRoute(), s.mgTagStatsWebhookAlt()}},
		{method: "PUT", path: "/v3/domains/{domain}/webhooks/{id}", group: groupMailgun, scope: account.ScopeWebhooks, handler: s.handleMailgunWebhookUpdate},
		{method: "DELETE", path: "/v3/domains/{domain}/webhooks/{id}", group: groupMailgun, scope: account.ScopeWebhooks, handler: s.handleMailgunWebhookDelete},

		// Mailgun's templates (mailgun_templates.go). GET of a template's
		// versions overlaps GET /v3/domains/{domain}/webhooks/{id}, so it
		// is an alt of the general GET /v3/{a}/{b}/{c}/{d} (where
		// /v3/{domain}/tags/{tag}/stats goes too) and, for a domain named
		// "domains", of the webhook route.
		{method: "POST", path: "/v3/{domain}/templates", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMGTemplateCreate, maxBody: maxTemplateBody},
		{method: "GET", path: "/v3/{domain}/templates", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMGTemplates,
			alts: []alt{s.mgRouteAlt("GET", s.handleMGRoute, literal("templates"))}},
		{method: "DELETE", path: "/v3/{domain}/templates", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMGTemplatesDelete,
			alts: []alt{s.mgRouteAlt("DELETE", s.handleMGRouteDelete, literal("templates"))}},
		{method: "GET", path: "/v3/{domain}/templates/{name}", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMGTemplate},
		{method: "PUT", path: "/v3/{domain}/templates/{name}", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMGTemplateUpdate},
		{method: "DELETE", path: "/v3/{domain}/templates/{name}", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMGTemplateDelete},
		{method: "GET", path: "/v3/{domain}/{kind}/{name}/{sub}", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMGNoRoute,
			alts: []alt{s.mgTemplateVersionsAlt(), s.mgTagStatsAlt()}},
		{method: "POST", path: "/v3/{domain}/templates/{name}/versions", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMGTemplateVersionCreate, maxBody: maxTemplateBody},
		{method: "GET", path: "/v3/{domain}/templates/{name}/versions/{tag}", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMGTemplateVersion},
		{method: "PUT", path: "/v3/{domain}/templates/{name}/versions/{tag}", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMGTemplateVersionUpdate, maxBody: maxTemplateBody},
		{method: "DELETE", path: "/v3/{domain}/templates/{name}/versions/{tag}", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMGTemplateVersionDelete},

		// Mailgun's stats and tags (mailgun_stats.go, mailgun_tags.go): read
		// with log:read like the events, tags changed with send like the
		// templates. GET and DELETE of one tag are alts of the
		// /v3/{domain}/{list}/{address} routes above (GET after the
		// webhooks: /v3/domains/tags/webhooks is domain tags' webhooks);
		// GET of a tag's stats is an alt of the general GET
		// /v3/{a}/{b}/{c}/{d} and, for a domain named "domains", of the
		// webhook route.
		{method: "GET", path: "/v3/stats/total", group: groupMailgun, scope: account.ScopeLogRead, handler: s.handleMGAccountStats},
		{method: "GET", path: "/v3/{domain}/stats/total", group: groupMailgun, scope: account.ScopeLogRead, handler: s.handleMGDomainStats},
		{method: "GET", path: "/v3/{domain}/tags", group: groupMailgun, scope: account.ScopeLogRead, handler: s.handleMGTags},
		{method: "PUT", path: "/v3/{domain}/tags/{tag}", group: groupMailgun, scope: account.ScopeSend, handler: s.handleMGTagUpdate},

		// Mailgun's Routes (mailgun_routes.go), the account's inbound
		// routes. GET and DELETE /v3/routes/{id} overlap the domain
		// patterns of two segments (/v3/{domain}/{list}, .../events,
		// .../templates) and are alts of each of them.
		{method: "GET", path: "/v3/routes", group: groupMailgun, scope: account.ScopeDomains, handler: s.handleMGRoutes},
		{method: "POST", path: "/v3/routes", group: groupMailgun, scope: account.ScopeDomains, handler: s.handleMGRouteCreate},
		{method: "PUT", path: "/v3/routes/{id}", group: groupMailgun, scope: account.ScopeDomains, handler: s.handleMGRouteUpdate},

		{method: "POST", path: "/api/domains", group: groupDomain, scope: account.ScopeDomains, handler: s.handleCreateDomain, audit: audit.DomainAdded},
		{method: "GET", path: "/api/domains", group: groupDomain, scope: account.ScopeDomains, handler: s.handleListDomains},
		{method: "GET", path: "/api/domains/{domain}", group: groupDomain, scope: account.ScopeDomains, handler: s.handleGetDomain},
		{method: "POST", path: "/api/domains/{domain}/verify", group: groupDomain, scope: account.ScopeDomains, handler: s.handleVerifyDomain, audit: audit.DomainVerified},
		{method: "DELETE", path: "/api/domains/{domain}", group: groupDomain, scope: account.ScopeDomains, handler: s.handleDeleteDomain, audit: audit.DomainDeleted},
	}
}
