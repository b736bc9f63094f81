package delivery

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/postline/postline/internal/dnsclient"
)

// TestNonPublicAddresses: the addresses the issue names are refused, on
// the list of addresses and on the socket about to connect; public ones
// pass. Nothing here is dialled but a loopback listener.
func TestNonPublicAddresses(t *testing.T) {
	t.Parallel()
	refused := []string{"0.0.0.0", "127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "10.1.2.3", "172.16.0.1",
		"192.168.1.1", "169.254.169.254", "fe80::1", "fd00:ec2::254", "100.64.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1"}
	public := []string{"8.8.8.8", "2001:4860:4860::8888", "203.0.114.1"}
	var all []netip.Addr
	for _, s := range append(append([]string{}, refused...), public...) {
		all = append(all, netip.MustParseAddr(s))
	}
	kept, out := publicOnly(all)
	if len(out) != len(refused) || len(kept) != len(public) {
		t.Errorf("publicOnly kept %v and refused %v; want %v refused", kept, out, refused)
	}
	for _, s := range refused {
		if err := refuseNonPublic("tcp", netip.AddrPortFrom(netip.MustParseAddr(s), 25).String(), nil); !errors.Is(err, errNonPublic) {
			t.Errorf("the socket check let %s through: %v", s, err)
		}
	}
	for _, s := range public {
		if err := refuseNonPublic("tcp", netip.AddrPortFrom(netip.MustParseAddr(s), 25).String(), nil); err != nil {
			t.Errorf("the socket check refused %s: %v", s, err)
		}
	}
}

// TestMXDialerRefusesLoopback: the MX dialer itself refuses a loopback
// address (what a name rebinding after the lookup would reach), and the
// listener there accepts nothing.
func TestMXDialerRefusesLoopback(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	tr, err := New(Config{Resolver: nilResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	tg := target{host: "mx.example.test", port: port, mx: true}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, e := tr.dial(ctx, tg, netip.MustParseAddr("127.0.0.1"), false)
	if e == nil || e.Message != MsgNonPublic || e.Temporary {
		t.Fatalf("dialling 127.0.0.1 for an MX: %v, want the permanent %q", e, MsgNonPublic)
	}
	select {
	case <-accepted:
		t.Error("the listener on 127.0.0.1 accepted a connection")
	case <-time.After(100 * time.Millisecond):
	}
}

// nilResolver answers nothing; the dial tests never resolve.
type nilResolver struct{}

func (nilResolver) LookupMX(context.Context, string) ([]dnsclient.MX, error) {
	return nil, errors.New("no DNS here")
}
func (nilResolver) LookupIP(context.Context, string) ([]netip.Addr, error) {
	return nil, errors.New("no DNS here")
}
