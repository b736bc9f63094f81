package store_test

import (
	"testing"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/storetest"
	"github.com/postline/postline/internal/testutil"
)

func TestEventsConformance(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			storetest.RunEvents(t, func(t *testing.T) *store.DB { return testutil.OpenDB(t, d) })
		})
	}
}
