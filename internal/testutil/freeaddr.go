package testutil

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
)

// handedOut keeps FreeAddr from giving one port twice in a test process.
var handedOut sync.Map

// FreeAddr is a loopback address nothing listens on (yet), for a server a
// test starts as a separate process.
//
// The port is chosen below the kernel's ephemeral range: a port the
// kernel gave a listener and took back goes next to any outgoing
// connection, and the tests that open thousands of client connections
// took the port between FreeAddr and the server's bind ("address already
// in use" in CI). Ports below the range are only ever bound on purpose.
func FreeAddr(t testing.TB) string {
	t.Helper()
	lo := ephemeralLow()
	for try := 0; lo > 11000 && try < 100; try++ {
		port := 10000 + rand.IntN(lo-10000)
		if _, taken := handedOut.LoadOrStore(port, true); taken {
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read; 0 where there is no such file).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		return 0
	}
	return lo
}
