package httpapi

import (
	"net/http"

	"github.com/postline/postline/internal/account"
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
)

type authedHandler func(w http.ResponseWriter, r *http.Request, p account.Principal) error

type route struct {
	method, path string
	group        group
	handler      authedHandler
	public       func(w http.ResponseWriter, r *http.Request) error
	maxBody      int64 // 0 = Limits.MaxJSONBody
	// faultsAsSuccess makes 500s use {success:false,message} in the
	// {error} group: the document gives the send endpoint that shape.
	faultsAsSuccess bool
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

		{method: "POST", path: "/api/email/validate", group: groupValidation, handler: s.handleValidate},
		{method: "POST", path: "/api/email/validate/strict", group: groupValidation, handler: s.handleValidateStrict},
		{method: "POST", path: "/api/email/validate/bulk/strict", group: groupValidation, handler: s.handleValidateBulkStrict},

		// List cleaning: durable jobs. They count against the validation
		// budget per address as they run, so the requests themselves use
		// the per-minute budget.
		{method: "POST", path: "/api/email/validate/jobs", group: groupDomain, handler: s.handleCreateValidationJob, maxBody: maxJobBody},
		{method: "GET", path: "/api/email/validate/jobs", group: groupDomain, handler: s.handleListValidationJobs},
		{method: "GET", path: "/api/email/validate/jobs/{id}", group: groupDomain, handler: s.handleGetValidationJob},
		{method: "GET", path: "/api/email/validate/jobs/{id}/results", group: groupDomain, handler: s.handleValidationJobResults},
		{method: "DELETE", path: "/api/email/validate/jobs/{id}", group: groupDomain, handler: s.handleCancelValidationJob},

		{method: "GET", path: "/api/domains/{domain}/log", group: groupDomainLog, handler: s.handleLogList},
		{method: "GET", path: "/api/domains/{domain}/log/stream", group: groupDomainLog, handler: s.handleLogStream},

		{method: "DELETE", path: "/api/domains/{domain}/tracklink", group: groupDelete, handler: s.handleRemoveTracking},
		{method: "DELETE", path: "/api/domains/{domain}/auth-domain", group: groupDelete, handler: s.handleRemoveAuthDomain},
		{method: "PUT", path: "/api/domains/{domain}/tracklink", group: groupDomain, handler: s.handleSetTracking},
		{method: "PUT", path: "/api/domains/{domain}/auth-domain", group: groupDomain, handler: s.handleSetAuthDomain},
		{method: "PUT", path: "/api/domains/{domain}/tracking", group: groupDomain, handler: s.handleSetTrackingOptions},

		{method: "POST", path: "/api/domains/{domain}/message", group: groupDomainLog, handler: s.handleSend,
			maxBody: maxSendBody, faultsAsSuccess: true},

		{method: "GET", path: "/api/domains/{domain}/suppressions", group: groupDomain, handler: s.handleSuppressions},
		{method: "GET", path: "/api/domains/{domain}/suppressions/unsubscribes", group: groupDomain, handler: s.handleUnsubscribes},
		{method: "POST", path: "/api/domains/{domain}/suppressions/whitelist", group: groupDomain, handler: s.handleWhitelist},
		{method: "DELETE", path: "/api/domains/{domain}/suppressions/{id}", group: groupDomain, handler: s.handleDeleteSuppression},

		{method: "POST", path: "/api/domains/{domain}/webhooks", group: groupDomain, handler: s.handleCreateWebhook},
		{method: "GET", path: "/api/domains/{domain}/webhooks", group: groupDomain, handler: s.handleListWebhooks},
		{method: "DELETE", path: "/api/domains/{domain}/webhooks/{id}", group: groupDomain, handler: s.handleDeleteWebhook},
		{method: "GET", path: "/api/domains/{domain}/webhooks/{id}/posts", group: groupDomain, handler: s.handleWebhookPosts},

		// The operator's: accounts and the queue across every domain (403 for
		// other accounts).
		{method: "GET", path: "/api/admin/accounts", group: groupDomain, handler: admin(s.handleAdminAccounts)},
		{method: "POST", path: "/api/admin/accounts", group: groupDomain, handler: admin(s.handleAdminCreateAccount)},
		{method: "POST", path: "/api/admin/accounts/{login}/disable", group: groupDomain, handler: admin(s.handleAdminDisable)},
		{method: "POST", path: "/api/admin/accounts/{login}/enable", group: groupDomain, handler: admin(s.handleAdminEnable)},
		{method: "GET", path: "/api/admin/accounts/{login}/keys", group: groupDomain, handler: admin(s.handleAdminKeys)},
		{method: "POST", path: "/api/admin/accounts/{login}/keys", group: groupDomain, handler: admin(s.handleAdminCreateKey)},
		{method: "GET", path: "/api/admin/queue", group: groupDomain, handler: admin(s.handleAdminQueue)},
		{method: "POST", path: "/api/admin/queue/retry", group: groupDomain, handler: admin(s.handleAdminRetry)},

		{method: "POST", path: "/api/domains", group: groupDomain, handler: s.handleCreateDomain},
		{method: "GET", path: "/api/domains", group: groupDomain, handler: s.handleListDomains},
		{method: "GET", path: "/api/domains/{domain}", group: groupDomain, handler: s.handleGetDomain},
		{method: "POST", path: "/api/domains/{domain}/verify", group: groupDomain, handler: s.handleVerifyDomain},
		{method: "DELETE", path: "/api/domains/{domain}", group: groupDomain, handler: s.handleDeleteDomain},
	}
}
