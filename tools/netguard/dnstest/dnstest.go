// Package dnstest is a DNS server for tests: it listens on 127.0.0.1 (UDP
// and TCP, same port), answers A and AAAA questions from a function the
// test gives, and counts the questions per name, so tests can make names
// resolve to any address, change their answer between lookups (DNS
// rebinding), or fail.
package dnstest

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Answer is what the server says about one question.
type Answer struct {
	// Addrs are returned when they match the question's type (A: IPv4,
	// AAAA: IPv6); the others are left out.
	Addrs []netip.Addr
	// RCode, if not success, is returned instead (NameError for NXDOMAIN,
	// ServerFailure...).
	RCode dnsmessage.RCode
}

// Handler answers a question for name (lower case, no trailing dot). n is
// how many questions of that type about that name came before this one.
type Handler func(name string, qtype dnsmessage.Type, n int) Answer

// Server is a running test DNS server.
type Server struct {
	// Addr is "127.0.0.1:port", for netguard's dnsServer setting.
	Addr string

	handler Handler
	pc      net.PacketConn
	mu      sync.Mutex
	counts  map[string]int // "name/type" -> questions so far
	wg      sync.WaitGroup
}

// New starts a server; it stops when the test ends.
func New(t testing.TB, h Handler) *Server {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: pc.LocalAddr().String(), handler: h, pc: pc, counts: map[string]int{}}
	s.wg.Add(1)
	go s.serveUDP()
	t.Cleanup(func() {
		pc.Close()
		s.wg.Wait()
	})
	return s
}

// Static answers from a fixed table of names to addresses; other names
// are NXDOMAIN.
func Static(table map[string][]string) Handler {
	return func(name string, qtype dnsmessage.Type, _ int) Answer {
		addrs, ok := table[name]
		if !ok {
			return Answer{RCode: dnsmessage.RCodeNameError}
		}
		var a Answer
		for _, s := range addrs {
			a.Addrs = append(a.Addrs, netip.MustParseAddr(s))
		}
		return a
	}
}

// Count is how many questions of type qtype about name were asked.
func (s *Server) Count(name string, qtype dnsmessage.Type) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[name+"/"+qtype.String()]
}

func (s *Server) serveUDP() {
	defer s.wg.Done()
	buf := make([]byte, 1500)
	for {
		n, addr, err := s.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if out := s.answer(buf[:n]); out != nil {
			s.pc.WriteTo(out, addr)
		}
	}
}

func (s *Server) answer(req []byte) []byte {
	var p dnsmessage.Parser
	hdr, err := p.Start(req)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	s.mu.Lock()
	key := name + "/" + q.Type.String()
	n := s.counts[key]
	s.counts[key] = n + 1
	s.mu.Unlock()

	var a Answer
	if q.Type == dnsmessage.TypeA || q.Type == dnsmessage.TypeAAAA {
		a = s.handler(name, q.Type, n)
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true,
		RecursionDesired: hdr.RecursionDesired, RecursionAvailable: true, RCode: a.RCode})
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil
	}
	if a.RCode == dnsmessage.RCodeSuccess {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
		for _, ip := range a.Addrs {
			switch {
			case q.Type == dnsmessage.TypeA && ip.Is4():
				b.AResource(rh, dnsmessage.AResource{A: ip.As4()})
			case q.Type == dnsmessage.TypeAAAA && ip.Is6():
				b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: ip.As16()})
			}
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}
