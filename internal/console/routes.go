package console

import "net/http"

type consoleRoute struct {
	pattern string
	handler http.Handler
}

// routes is every page of the console: who may see it is in the wrapper
// (public, or signed in; POSTs also need the CSRF token and a role that
// changes things: a viewer's are refused; ownerOnly and adminOnly narrow
// further).
func (c *Console) routes() []consoleRoute {
	return []consoleRoute{
		{"GET /{$}", c.page(c.overview)},
		{"POST /sign-in", http.HandlerFunc(c.signIn)},
		{"POST /sign-out", c.form(c.signOut)},
		{"GET /analytics", c.page(c.analytics)},
		{"GET /domains", c.page(c.domainList)},
		{"POST /domains", c.form(c.addDomain)},
		{"GET /domains/{name}", c.page(c.domainPage)},
		{"POST /domains/{name}/verify", c.form(c.verifyDomain)},
		{"POST /domains/{name}/settings", c.form(c.domainSettings)},
		{"POST /domains/{name}/delete", c.form(c.deleteDomain)},
		{"POST /domains/{name}/test-message", c.form(c.testMessage)},
		{"GET /domains/{name}/log", c.page(c.logPage)},
		{"GET /domains/{name}/log/tail", c.page(c.logTail)},
		{"GET /domains/{name}/log/export", c.page(c.logExport)},
		{"GET /domains/{name}/messages/{id}", c.page(c.chainPage)},
		{"GET /domains/{name}/messages/{id}/html", c.page(c.messageHTML)},
		{"GET /domains/{name}/messages/{id}/raw", c.page(c.messageRaw)},
		{"GET /domains/{name}/messages/{id}/attachments/{n}", c.page(c.messageAttachment)},
		{"POST /domains/{name}/messages/{id}/cancel", c.form(c.cancelMessage)},
		{"GET /domains/{name}/templates", c.page(c.templatesPage)},
		{"POST /domains/{name}/templates", c.form(c.createTemplate)},
		{"GET /domains/{name}/templates/{tpl}", c.page(c.templatePage)},
		{"POST /domains/{name}/templates/{tpl}", c.form(c.updateTemplate)},
		{"POST /domains/{name}/templates/{tpl}/delete", c.form(c.deleteTemplate)},
		{"GET /domains/{name}/suppressions", c.page(c.suppressionsPage)},
		{"POST /domains/{name}/suppressions", c.form(c.addSuppression)},
		{"POST /domains/{name}/suppressions/{id}/delete", c.form(c.deleteSuppression)},
		{"POST /domains/{name}/suppressions/import", c.form(c.importSuppressions)},
		{"POST /domains/{name}/suppressions/remove", c.form(c.removeSuppressions)},
		{"POST /domains/{name}/suppressions/clear", c.form(c.clearSuppressions)},
		{"GET /domains/{name}/suppressions/export", c.page(c.exportSuppressions)},
		{"GET /domains/{name}/inbound", c.page(c.inboundList)},
		{"GET /domains/{name}/inbound/{id}", c.page(c.inboundMessage)},
		{"GET /domains/{name}/inbound/{id}/html", c.page(c.inboundHTML)},
		{"GET /domains/{name}/inbound/{id}/raw", c.page(c.inboundRaw)},
		{"GET /domains/{name}/inbound/{id}/attachments/{n}", c.page(c.inboundAttachment)},
		{"GET /domains/{name}/webhooks", c.page(c.webhooksPage)},
		{"POST /domains/{name}/webhooks", c.form(c.createWebhook)},
		{"POST /domains/{name}/webhooks/{id}/delete", c.form(c.deleteWebhook)},
		{"POST /domains/{name}/webhooks/{id}/test", c.form(c.testWebhook)},
		{"GET /validation", c.page(c.validationPage)},
		{"POST /validation/jobs", c.form(c.uploadList)},
		{"GET /validation/jobs/{id}", c.page(c.jobPage)},
		{"GET /validation/jobs/{id}/results.csv", c.page(c.jobResults)},
		{"GET /keys", c.page(c.keysPage)},
		{"POST /keys", c.form(c.createKey)},
		{"POST /keys/{id}/revoke", c.form(c.revokeKey)},
		{"POST /password", c.form(c.ownerOnly(c.setPassword))},
		{"GET /members", c.page(c.ownerOnly(c.membersPage))},
		{"POST /members", c.form(c.ownerOnly(c.inviteMember))},
		{"POST /members/{id}/role", c.form(c.ownerOnly(c.setMemberRole))},
		{"POST /members/{id}/remove", c.form(c.ownerOnly(c.removeMember))},
		{"GET /audit", c.page(c.ownerOnly(c.auditPage))},
		{"GET /join/{token}", http.HandlerFunc(c.joinPage)},
		{"POST /join/{token}", http.HandlerFunc(c.join)},
		{"GET /admin", c.page(c.adminOnly(c.adminPage))},
		{"GET /admin/accounts/{login}/audit", c.page(c.adminOnly(c.adminAuditPage))},
		{"POST /admin/accounts", c.form(c.adminOnly(c.adminCreateAccount))},
		{"POST /admin/accounts/{login}/disable", c.form(c.adminOnly(c.adminSetDisabled(true)))},
		{"POST /admin/accounts/{login}/enable", c.form(c.adminOnly(c.adminSetDisabled(false)))},
		{"POST /admin/queue/retry", c.form(c.adminOnly(c.adminRetry))},
		{"POST /admin/queue/suspensions", c.form(c.adminOnly(c.adminSuspend))},
		{"POST /admin/queue/suspensions/{id}/resume", c.form(c.adminOnly(c.adminResume))},
		{"GET /static/{file}", http.HandlerFunc(c.static)},
		{"/", c.page(c.notFound)},
	}
}
