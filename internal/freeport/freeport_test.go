package freeport_test

import (
	"fmt"
	"net"
	"testing"

	"github.com/pagewatch/pagewatch/internal/freeport"
)

func TestPortsAreFreeAndBelowTheEphemeralRange(t *testing.T) {
	for range 20 {
		p := freeport.TCPAndUDP(t)
		if p < 20000 || p >= 32768 {
			t.Fatalf("port %d outside 20000..32767", p)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", p)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("tcp %s: %v", addr, err)
		}
		c, err := net.ListenPacket("udp", addr)
		if err != nil {
			t.Fatalf("udp %s: %v", addr, err)
		}
		_ = c.Close()
		_ = l.Close()
	}
	if p := freeport.TCP(t); p < 20000 || p >= 32768 {
		t.Fatalf("port %d", p)
	}
}
