// Package freeport picks loopback ports for servers that must be told
// their port before they start (a config file, a cluster's routes).
//
// A port the kernel hands out for ":0" comes from its ephemeral range
// (32768 and up by default), from which it also hands out the local ports
// of outgoing connections: between the probe and the server's bind, a
// connection elsewhere in the tests can take it, and the server fails
// with "address already in use". Ports below that range are only ever
// taken on request, so these are picked there, at random, so that test
// binaries run side by side rarely probe the same one.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"testing"
)

// The range picked from: below Linux's default ephemeral range
// (net.ipv4.ip_local_port_range, 32768-60999) and above the well-known
// services most machines run.
const (
	lowest  = 20000
	highest = 32000
)

// TCP is a loopback port free for TCP now.
func TCP(tb testing.TB) int {
	tb.Helper()
	return pick(tb, false)
}

// TCPAndUDP is a loopback port free for both TCP and UDP now, for a
// listener that takes both on one address (syslog).
func TCPAndUDP(tb testing.TB) int {
	tb.Helper()
	return pick(tb, true)
}

// One is Ports(1)'s port.
func One() (int, error) {
	p, err := try(false)
	return p, err
}

// Ports are n distinct loopback ports free for TCP now, for code that
// has no test at hand to fail.
func Ports(n int) ([]int, error) {
	out := make([]int, 0, n)
	for len(out) < n {
		p, err := try(false)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

func pick(tb testing.TB, udp bool) int {
	tb.Helper()
	p, err := try(udp)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// given holds the ports this process has handed out: free when probed,
// they may not be bound yet, and a second server must not get one.
var (
	mu    sync.Mutex
	given = map[int]bool{}
)

func try(udp bool) (int, error) {
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		port := lowest + rand.IntN(highest-lowest)
		if given[port] {
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ok := true
		if udp {
			c, err := net.ListenPacket("udp", addr)
			if err == nil {
				_ = c.Close()
			}
			ok = err == nil
		}
		_ = l.Close()
		if ok {
			given[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("freeport: no free port in %d..%d", lowest, highest-1)
}
