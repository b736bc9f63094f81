package app

import (
	"context"
	"crypto/sha256"
	"net/netip"
	"time"

	"github.com/postline/postline/internal/inbound"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/tracking"
)

// openTracking builds the tracking URL maker (used when messages are
// built) and the service answering those URLs. Its key is derived from
// the instance secret, so every process sharing the database makes and
// accepts the same tokens.
func (a *App) openTracking(secretKey []byte) error {
	a.TrackingSigner = tracking.NewSigner(deriveKey("tracking", secretKey))
	urls, err := tracking.NewURLs(a.TrackingSigner, a.Config.EffectivePublicURL(), a.Config.SMTPListen != "")
	if err != nil {
		return err
	}
	a.TrackingURLs = &urls
	st := store.NewTracking(a.DB)
	a.Tracking = tracking.NewService(st, a.Events, a.TrackingSigner, nil)
	a.Tracking.ServeOn(publicHost(a.Config.EffectivePublicURL()), listenHost(a.Config.Addr))
	perMinute := a.Config.TrackingPerAddressPerMinute
	a.Tracking.LimitAddresses(func(ctx context.Context, ip string) bool {
		r, err := a.Limiter.Allow(ctx, "track:"+addressKey(ip), perMinute, time.Minute)
		return err != nil || r.Allowed // a counter that fails must not lose real opens
	})
	if a.Config.SMTPListen != "" {
		a.Inbound = inbound.New(inbound.Config{Domain: a.Config.HeloName, VERPKey: verpKey(secretKey),
			MaxMessageBytes: a.Config.SMTPMaxBytes, MaxHeaderBytes: a.Config.InboundMaxHeaderBytes, Registerer: a.Registry,
			Signer: a.TrackingSigner, Logger: a.Logger, Conns: a.inboundConns(), Spool: a.Spool.Share(inboundSpoolShare),
			Receiver: a.Receiving, Limit: a.inboundLimit}, st, a.Events)
	}
	return nil
}

// inboundSpoolShare is the part of the spool's memory and disk budgets the
// inbound listener may hold: anyone may connect to it without a login, and
// a flood of unfinished bounces must leave tenants' sends room.
const inboundSpoolShare = 0.5

// addressKey is the unit a client address is limited by: the address
// for IPv4, its /64 for IPv6 (one subscriber's allocation).
func addressKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Is4() || a.Is4In6() {
		return ip
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// verpKey signs bounce addresses: the workers make them, the inbound
// listener checks them.
func verpKey(secretKey []byte) []byte { return deriveKey("verp", secretKey) }

// deriveKey is the key for one purpose, derived from the instance secret so
// that every process sharing the database has it and no purpose's key
// reveals another's.
func deriveKey(purpose string, secretKey []byte) []byte {
	sum := sha256.Sum256(append([]byte("postline "+purpose+"\x00"), secretKey...))
	return sum[:]
}
