package tracking_test

import (
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/storetest"
	"github.com/postline/postline/internal/testutil"
	"github.com/postline/postline/internal/tracking"
)

// A host is a tracking host only when a verified domain set it, and never
// when it is one of the service's own names, whatever is stored.
func TestIsTrackingHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testutil.OpenDB(t, store.SQLite)
	box, _ := secret.NewBox(make([]byte, 32))
	domains := store.NewDomains(db, box)
	svc := tracking.NewService(store.NewTracking(db), nil, tracking.NewSigner(make([]byte, 32)), nil)
	svc.ServeOn("Mail.Postline.Test", "127.0.0.1")
	for i, host := range []string{"track.a.example", "mail.postline.test"} { // the second predates the rules
		_, d := storetest.NewDomainRow(t, db, "user"+string(rune('a'+i)), []string{"a.example", "b.example"}[i])
		now := time.Now()
		d.TrackingDomain, d.VerifiedAt = host, &now
		if err := domains.UpdateDomain(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for host, want := range map[string]bool{"track.a.example": true, "TRACK.A.EXAMPLE.": true, "mail.postline.test": false,
		"127.0.0.1": false, "": false, "other.example": false} {
		if got, err := svc.IsTrackingHost(ctx, host); err != nil || got != want {
			t.Errorf("IsTrackingHost(%q) = %v, %v; want %v", host, got, err, want)
		}
	}
}
