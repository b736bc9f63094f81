package mailforward

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/mail"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/mailauth"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/sending"
)

// job is one recipient's message and its forwards.
type job struct {
	f   *Forwarder
	h   receiving.Handoff
	dom domain.Domain
	msg message
	// rewrite is decided once, at the first forward that gets that far.
	decided bool
	rewrite *rewriteDecision
}

// rewriteDecision is a From to rewrite and why.
type rewriteDecision struct {
	addrs  []*mail.Address
	reason string
}

// forward carries out one forward(address) action.
func (j *job) forward(ctx context.Context, routeID, to string) (receiving.ActionOutcome, error) {
	ms := marks(j.msg)
	switch {
	case len(j.msg.values("From")) > 1:
		// Receivers differ on which From they show and which they check
		// DMARC against: one naming the domain that signs the forward
		// would vouch for the other.
		return refused(fmt.Sprintf("the message has %d From fields (RFC 5322 allows one): not forwarded under %s's signature",
			len(j.msg.values("From")), j.dom.Name)), nil
	case passedThrough(ms, routeID):
		return refused("loop: the message was already forwarded by this route (" + sending.ForwardMarkHeader + ")"), nil
	case len(ms) >= j.f.cfg.MaxForwards:
		return refused(j.f.maxMarksReason(len(ms))), nil
	}
	digest := j.msg.digest()
	key := forwardKey(digest, routeID, j.h.Recipient, to)
	scope := "forward:" + j.dom.Name // no domain name has a colon: never an API key's scope
	in := j.f.deps.Intake
	claim, status, body, err := in.Reserve(ctx, j.h.AccountID, scope, key)
	switch {
	case err != nil:
		return receiving.ActionOutcome{}, err
	case claim == "" && status == 0:
		return receiving.ActionOutcome{}, errInFlight
	case claim == "":
		return earlier(body), nil
	}
	out, err := j.queue(ctx, routeID, to, digest)
	if err != nil {
		in.Forget(ctx, j.h.AccountID, scope, key, claim) //nolint:errcheck // pending keys expire
		return receiving.ActionOutcome{}, err
	}
	b, _ := json.Marshal(out)
	if err := in.Remember(ctx, j.h.AccountID, scope, key, claim, 200, b); err != nil {
		j.f.cfg.Logger.Warn("mailforward: remembering a queued forward", "domain", j.dom.Name, "route", routeID, "error", err)
	}
	return out, nil
}

// queue builds the forward and hands it to the intake. A refusal by the
// intake (suppressed, a limit, a domain that cannot send) is an outcome;
// anything else is a fault.
func (j *job) queue(ctx context.Context, routeID, to string, digest [32]byte) (receiving.ActionOutcome, error) {
	m := j.msg
	m.fields = append([]field{markOf(routeID, j.dom.Name)}, m.fields...)
	reason := ""
	if rw := j.decideRewrite(ctx); rw != nil {
		rewriteFrom(&m, rw.addrs, j.dom.Name)
		reason = rw.reason
	}
	if len(m.values("Message-Id")) == 0 {
		// The same message gets the same id, delivered again or not.
		m.fields = append(m.fields, newField("Message-Id", "<"+hex.EncodeToString(digest[:12])+".fwd@"+j.dom.Name+">"))
	}
	in := j.f.deps.Intake
	dom := j.dom
	p, err := in.PrepareRaw(ctx, sending.RawInput{Data: m.bytes(), Domain: &dom, Forward: true})
	if err != nil {
		return refusal(err)
	}
	acc, err := in.AcceptRaw(ctx, dom, j.h.AccountID, sending.RawMessage{From: "forwarded@" + dom.Name,
		Recipients: []string{to}, Data: p.Data, MessageID: p.MessageID, Subject: p.Subject, Forward: true})
	switch {
	case err != nil:
		return refusal(err)
	case acc.Queued == 0:
		return refused("suppressed: the address is on " + dom.Name + "'s suppression lists"), nil
	}
	return receiving.ActionOutcome{Outcome: OutcomeQueued, Reason: reason, MessageID: p.MessageID}, nil
}

// refusal is the outcome of an intake's refusal; a fault is returned.
func refusal(err error) (receiving.ActionOutcome, error) {
	switch apperr.CodeOf(err) {
	case apperr.Internal, apperr.Unavailable, apperr.InsufficientStorage:
		return receiving.ActionOutcome{}, err
	}
	return refused(err.Error()), nil
}

// decideRewrite looks up the From domain's DMARC policy once: a From
// whose domain asks receivers to quarantine or reject mail it does not
// vouch for is rewritten (nil: kept). A lookup that fails is taken as
// strict: a rewritten From reaches the inbox, a kept one may not.
func (j *job) decideRewrite(ctx context.Context) *rewriteDecision {
	if j.decided {
		return j.rewrite
	}
	j.decided = true
	addrs, ok := fromAddresses(j.msg)
	if !ok {
		return nil
	}
	from := domainOf(addrs[0].Address)
	policy, err := mailauth.Policy(ctx, j.f.deps.Resolver, from)
	switch {
	case err != nil:
		j.rewrite = &rewriteDecision{addrs: addrs, reason: fmt.Sprintf("From rewritten: the DMARC policy of %s could not be read", from)}
	case strictPolicy(policy):
		j.rewrite = &rewriteDecision{addrs: addrs, reason: fmt.Sprintf("From rewritten: %s publishes DMARC p=%s", from, policy)}
	}
	return j.rewrite
}

// earlier is the outcome remembered for a forward already carried out for
// an earlier delivery of the same message, said to be one.
func earlier(body []byte) receiving.ActionOutcome {
	var out receiving.ActionOutcome
	if json.Unmarshal(body, &out) != nil || out.Outcome == "" {
		out = receiving.ActionOutcome{Outcome: OutcomeQueued}
	}
	if out.Outcome == OutcomeQueued {
		out.Reason = "queued for an earlier delivery of the same message"
	} else {
		out.Reason += " (for an earlier delivery of the same message)"
	}
	return out
}

// forwardKey is the idempotency key of one forward: the message as its
// sender wrote it, the route, the recipient it came for and the
// destination.
func forwardKey(digest [32]byte, routeID, recipient, to string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%x\x00%s\x00%s\x00%s", digest, routeID, recipient, to)
	return hex.EncodeToString(h.Sum(nil))
}
