package netguard

import (
	"encoding/binary"
	"net/netip"
)

// Class is what an address is, as far as outbound requests are concerned.
type Class uint8

// Address classes. Public is the only one a request may reach by default.
const (
	Public Class = iota
	Loopback
	Private
	LinkLocal
	CGNAT
	Unspecified
	Multicast
	Broadcast
	Metadata
	Reserved
)

// Rule is the name of the rule that refuses an address of this class.
func (c Class) Rule() Rule {
	switch c {
	case Loopback:
		return RuleLoopback
	case Private:
		return RulePrivate
	case LinkLocal:
		return RuleLinkLocal
	case CGNAT:
		return RuleCGNAT
	case Unspecified:
		return RuleUnspecified
	case Multicast:
		return RuleMulticast
	case Broadcast:
		return RuleBroadcast
	case Metadata:
		return RuleMetadata
	case Reserved:
		return RuleReserved
	}
	return ""
}

// String describes the class in the words of a refusal: "a loopback address".
func (c Class) String() string {
	switch c {
	case Public:
		return "a public address"
	case Loopback:
		return "a loopback address"
	case Private:
		return "a private address"
	case LinkLocal:
		return "a link-local address"
	case CGNAT:
		return "a carrier-grade NAT (CGNAT) address"
	case Unspecified:
		return "an unspecified address"
	case Multicast:
		return "a multicast address"
	case Broadcast:
		return "a broadcast address"
	case Metadata:
		return "a cloud metadata address"
	case Reserved:
		return "a reserved address"
	}
	return "an unknown address"
}

// liftable reports whether AllowPrivate may open a class. Metadata
// endpoints hand out cloud credentials; the unspecified address reaches the
// local host on Linux; multicast and broadcast are never a web server. No
// range an operator lists re-opens them.
func (c Class) liftable() bool { return c.Rule().OpenedByAllowPrivate() }

// Verdict is the classification of one address.
type Verdict struct {
	Class Class
	// Form names the IPv6 encoding the class was read through
	// ("IPv4-mapped", "NAT64", "6to4", "Teredo", ...), empty when the
	// address was classified as itself.
	Form string
	// Embedded is the IPv4 address inside that form.
	Embedded netip.Addr
}

type v4range struct {
	base, mask uint32
	class      Class
}

func v4(a, b, c, d byte, bits int) v4range {
	return v4range{base: uint32(a)<<24 | uint32(b)<<16 | uint32(c)<<8 | uint32(d), mask: ^uint32(0) << (32 - bits)}
}

func (r v4range) as(c Class) v4range { r.class = c; return r }

// v4table is searched in order, so exact metadata addresses come before the
// ranges holding them. It is a flat slice of integers because it runs once
// per connection.
var v4table = []v4range{
	v4(169, 254, 169, 254, 32).as(Metadata), // AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle...
	v4(169, 254, 170, 2, 32).as(Metadata),   // AWS ECS task metadata
	v4(169, 254, 0, 23, 32).as(Metadata),    // Tencent Cloud
	v4(100, 100, 100, 200, 32).as(Metadata), // Alibaba Cloud
	v4(168, 63, 129, 16, 32).as(Metadata),   // Azure WireServer (a public address)
	v4(192, 0, 0, 192, 32).as(Metadata),     // Oracle Cloud (legacy)
	v4(255, 255, 255, 255, 32).as(Broadcast),
	v4(0, 0, 0, 0, 8).as(Unspecified), // "this network": 0.0.0.0 reaches the local host
	v4(127, 0, 0, 0, 8).as(Loopback),
	v4(10, 0, 0, 0, 8).as(Private),
	v4(172, 16, 0, 0, 12).as(Private),
	v4(192, 168, 0, 0, 16).as(Private),
	v4(169, 254, 0, 0, 16).as(LinkLocal),
	v4(100, 64, 0, 0, 10).as(CGNAT),
	v4(224, 0, 0, 0, 4).as(Multicast),
	v4(240, 0, 0, 0, 4).as(Reserved),     // future use
	v4(192, 0, 0, 0, 24).as(Reserved),    // IETF protocol assignments
	v4(192, 0, 2, 0, 24).as(Reserved),    // documentation
	v4(198, 51, 100, 0, 24).as(Reserved), // documentation
	v4(203, 0, 113, 0, 24).as(Reserved),  // documentation
	v4(198, 18, 0, 0, 15).as(Reserved),   // benchmarking
	v4(192, 88, 99, 0, 24).as(Reserved),  // 6to4 relay anycast (deprecated)
}

func classify4(a uint32) Class {
	for _, r := range v4table {
		if a&r.mask == r.base {
			return r.class
		}
	}
	return Public
}

// embedding is an IPv6 range that carries an IPv4 address.
type embedding struct {
	prefix netip.Prefix
	form   string
	v4     func(b [16]byte) uint32
}

func last32(b [16]byte) uint32 { return binary.BigEndian.Uint32(b[12:]) }

var embeddings = []embedding{
	// ::ffff:0:0/96 is unmapped before classification; this is its
	// RFC 2765 cousin ::ffff:0:a.b.c.d.
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated", last32},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64", last32},
	{netip.MustParsePrefix("2002::/16"), "6to4", func(b [16]byte) uint32 { return binary.BigEndian.Uint32(b[2:6]) }},
	// Teredo carries the client's address inverted in the last 32 bits.
	{netip.MustParsePrefix("2001::/32"), "Teredo", func(b [16]byte) uint32 { return ^last32(b) }},
}

type v6range struct {
	prefix netip.Prefix
	class  Class
}

var v6table = []v6range{
	{netip.MustParsePrefix("fd00:ec2::254/128"), Metadata}, // AWS IMDS over IPv6
	{netip.MustParsePrefix("::/128"), Unspecified},
	{netip.MustParsePrefix("::1/128"), Loopback},
	{netip.MustParsePrefix("fe80::/10"), LinkLocal},
	{netip.MustParsePrefix("fc00::/7"), Private},  // unique local
	{netip.MustParsePrefix("fec0::/10"), Private}, // site-local (deprecated)
	{netip.MustParsePrefix("ff00::/8"), Multicast},
	{netip.MustParsePrefix("64:ff9b:1::/48"), Reserved}, // local-use NAT64: reaches a private network
	{netip.MustParsePrefix("100::/64"), Reserved},       // discard-only
	{netip.MustParsePrefix("2001:db8::/32"), Reserved},  // documentation
	{netip.MustParsePrefix("3fff::/20"), Reserved},      // documentation
	{netip.MustParsePrefix("::/96"), Reserved},          // IPv4-compatible (deprecated)
}

// Classify says what ip is. An IPv4-mapped address (::ffff:a.b.c.d) is
// the IPv4 address; an IPv6 form that carries an IPv4 address (NAT64,
// 6to4, Teredo, IPv4-compatible, IPv4-translated) takes the class of the
// address it carries when that class is not public, so 64:ff9b::7f00:1 is
// loopback. A zone is ignored.
func Classify(ip netip.Addr) Verdict {
	ip = ip.WithZone("")
	if ip.Is4In6() {
		return Verdict{Class: classify4(v4bits(ip.Unmap())), Form: "IPv4-mapped", Embedded: ip.Unmap()}
	}
	if ip.Is4() {
		return Verdict{Class: classify4(v4bits(ip))}
	}
	if !ip.IsValid() {
		return Verdict{Class: Unspecified}
	}
	b := ip.As16()
	for _, e := range embeddings {
		if e.prefix.Contains(ip) {
			inner := e.v4(b)
			if c := classify4(inner); c != Public {
				return Verdict{Class: c, Form: e.form, Embedded: from32(inner)}
			}
			break
		}
	}
	for _, r := range v6table {
		if r.prefix.Contains(ip) {
			if r.class == Reserved && r.prefix.Bits() == 96 {
				// ::a.b.c.d names the address it carries.
				if c := classify4(last32(b)); c != Public {
					return Verdict{Class: c, Form: "IPv4-compatible", Embedded: from32(last32(b))}
				}
			}
			return Verdict{Class: r.class}
		}
	}
	return Verdict{Class: Public}
}

func v4bits(ip netip.Addr) uint32 {
	b := ip.As4()
	return binary.BigEndian.Uint32(b[:])
}

func from32(a uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], a)
	return netip.AddrFrom4(b)
}
