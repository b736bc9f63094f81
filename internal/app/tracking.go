package app

import (
	"crypto/sha256"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/tracking"
)

// openTracking builds the tracking URL maker (used when messages are
// built) and the service answering those URLs. Its key is derived from
// the instance secret, so every process sharing the database makes and
// accepts the same tokens.
func (a *App) openTracking(secretKey []byte) error {
	sum := sha256.Sum256(append([]byte("postline tracking\x00"), secretKey...))
	a.TrackingSigner = tracking.NewSigner(sum[:])
	urls, err := tracking.NewURLs(a.TrackingSigner, a.Config.EffectivePublicURL(), a.Config.SMTPListen != "")
	if err != nil {
		return err
	}
	a.TrackingURLs = &urls
	a.Tracking = tracking.NewService(store.NewTracking(a.DB), a.Events, a.TrackingSigner, nil)
	return nil
}
