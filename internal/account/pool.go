package account

import (
	"context"
	"fmt"
	"strings"

	"github.com/postline/postline/internal/apperr"
)

// SetPoolCheck gives the Service the egress file's pools: hasPool reports
// whether a pool name is defined. Without it no pool is, and only ""
// may be set.
func (s *Service) SetPoolCheck(hasPool func(name string) bool) { s.hasPool = hasPool }

// SetPool sets login's egress pool, the default of its domains that name
// none (a domain's own pool wins); "" clears it. A pool the egress file
// does not define is a field error on delivery.pool, as for a domain.
func (s *Service) SetPool(ctx context.Context, login, pool string) (Account, error) {
	pool = strings.TrimSpace(pool)
	if pool != "" && (s.hasPool == nil || !s.hasPool(pool)) {
		return Account{}, apperr.Field("delivery.pool", fmt.Sprintf("no egress pool named %.64q in the egress file", pool))
	}
	a, err := s.User(ctx, login)
	if err != nil {
		return Account{}, err
	}
	if err := s.store.SetAccountPool(ctx, a.ID, pool); err != nil {
		return Account{}, err
	}
	a.Pool = pool
	return a, nil
}
