// Package mailgun holds Mailgun's shapes of Postline's data, shared by the
// /v3/ API (internal/httpapi) and Mailgun-format webhooks
// (internal/webhook): a log entry as a Mailgun event (the events API's
// items and a webhook post's event-data are the same object), the webhook
// ids and the events each answers to, and the signature of a webhook post.
// It knows nothing of HTTP or storage.
package mailgun
