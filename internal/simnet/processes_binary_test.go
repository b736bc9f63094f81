package simnet_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postline/postline/internal/simnet"
	"github.com/postline/postline/internal/testutil"
)

// Two `postline serve` processes on one PostgreSQL database share the
// provider_* limits: both deliver from the one queue, both from
// 127.0.0.1, and the provider, which counts per client address, never
// sees more than provider_connection_limit connections or
// provider_max_message_rate messages from the two together. The rate is
// counted over 2 s (20 a second): the provider forgives a twentieth of
// its period for scheduling jitter, and 50 ms of a per-second rate was
// less than a loaded CI machine's (2 violations in a PostgreSQL pass).
func TestBinaryProviderLimitsAcrossProcesses(t *testing.T) {
	if testutil.PostgresURL() == "" {
		t.Skip("several serve processes share a PostgreSQL database (POSTLINE_TEST_DATABASE_URL)")
	}
	t.Parallel()
	n := simnet.New(t, simnet.Config{Providers: []simnet.ProviderConfig{
		{Name: "outlook", Domains: 20, PerDomainMX: true, MaxConnections: 3, MessageRate: simnet.Rate{Count: 40, Per: 2 * time.Second}},
	}})
	shaping := filepath.Join(t.TempDir(), "shaping.toml")
	if err := os.WriteFile(shaping, []byte(`
["default"]
connection_limit = 3

[provider."outlook"]
match = [{MXSuffix = ".outlook.simnet.test"}]
provider_connection_limit = 3
provider_max_message_rate = "40/2s"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServeWith(t, n, map[string]string{"POSTLINE_SHAPING_FILE": shaping})
	first := s.addr
	s.start(t) // the second process, on the same database
	domains := n.Domains()
	var rcpts []string
	for i := range 200 {
		rcpts = append(rcpts, fmt.Sprintf("user%d@%s", i, domains[i%len(domains)]))
	}
	// Half queued through each process; either may deliver any of them.
	for i := 0; i < len(rcpts); i += 50 {
		if i == 100 {
			s.addr = first
		}
		s.send(t, rcpts[i:i+50])
	}
	waitAll(t, n, rcpts)
	report(t, n)
	n.CheckNoViolations(t)
}
