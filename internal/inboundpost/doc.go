// Package inboundpost carries out what routes post to URLs: forward(URL)
// actions and store(notify=URL) notifications of received mail. It is the
// URL side of receiving.Forwarders.
//
// # Queue
//
// Outbox.Forward is called by receiving.Receive for each recipient,
// before the message's receipt is recorded and answered 250. It writes one
// post per action into the outbox (table inbound_posts, with the message)
// in one transaction and answers "queued", with the post's token in the
// action's object of the received log entry (details.actions[i].post). An
// error writing it refuses the message for now (451). Each post holds its
// own copy of the message until it ends, so the account's pending posts
// are bounded in bytes (OutboxConfig.MaxPendingBytes,
// --inbound-post-bytes-per-account): past it the message is refused for
// now (receiving.ErrPostsFull, 452 4.2.2).
//
// Queueing and recording are two transactions, so a post can be queued
// for a message whose receipt then fails (the account's store is full, the
// database fails, the process dies): the client is told to try again, and
// will send the same message again. Two rules keep that harmless:
//
//   - a post waits until the received entry that names its token is in
//     the log; one whose entry is not there after RecordWait (5 minutes)
//     is dropped without posting (state dropped, counted, not logged:
//     the message was never received);
//   - a post's token is derived from the message as the client sent it,
//     the recipient and the action (NewToken), and unique in the outbox:
//     the client's retry queues the same token, which joins the first post
//     instead of adding one, and its received entry names that token, so
//     the post goes out once. A notification's token also covers its
//     stored copy, which is new on each try, so only the try whose copy was
//     recorded posts one.
//
// A post that times out after the receiver took it is posted again (at
// least once): receivers drop duplicates by the token, which is the same
// on every try of a post.
//
// # Delivery
//
// A Dispatcher in every serve process looks for due posts, takes a lease
// on each (so one process posts it), and POSTs it to its URL through the
// webhooks' guarded client (webhook.NewClient: no redirects, and no
// loopback, private, link-local or multicast address unless
// --webhook-allow-private). A 2xx answer ends it posted. A 4xx other than
// 408 and 429 (406 is Mailgun's "do not retry", 403 Postmark's) or an
// address the guard refuses ends it failed at once. Anything else (5xx,
// 408, 429, a redirect, no connection, no answer within
// --inbound-post-timeout) is tried again after --inbound-post-first-retry,
// doubling to an hour, until --inbound-post-retry-window (8 hours) after it
// was queued; then it ends failed. Each end (posted or failed) is a log
// entry of type post under the received entry's message id: details post
// (the token), route, action (forward or notify), url, format, outcome,
// status, error, attempts. Finished posts are kept (without the message)
// for the inbound retention so that a late retry is still recognised.
//
// # Formats
//
// The route's format says what is posted (see the README's "Receiving
// mail"): mailgun (Mailgun's form fields: multipart/form-data with the
// attachments as files when there are any, else form-urlencoded, signed
// with the account's webhook signing key as Mailgun signs), json
// (Postmark's inbound JSON) or raw (the message as received,
// message/rfc822). Every post carries Postline-Timestamp, Postline-Token
// and Postline-Signature headers (the same signature), and a
// notification's Postline-Message-Url (mailgun: also the message-url
// field; json: MessageURL).
package inboundpost
