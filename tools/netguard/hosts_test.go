package netguard

import (
	"testing"
)

func TestParseHostReadsEveryIPv4Spelling(t *testing.T) {
	cases := []struct {
		in, name     string
		nonCanonical bool
		bad          bool
	}{
		{"127.0.0.1", "127.0.0.1", false, false},
		{"127.1", "127.0.0.1", true, false},
		{"127.0.1", "127.0.0.1", true, false},
		{"2130706433", "127.0.0.1", true, false},
		{"0x7f000001", "127.0.0.1", true, false},
		{"0X7F000001", "127.0.0.1", true, false},
		{"017700000001", "127.0.0.1", true, false},
		{"0177.0.0.1", "127.0.0.1", true, false},
		{"0x7f.0.0.1", "127.0.0.1", true, false},
		{"0x7f.1", "127.0.0.1", true, false},
		{"127.000.000.001", "127.0.0.1", true, false},
		{"0", "0.0.0.0", true, false},
		{"0x", "0.0.0.0", true, false},
		{"3232235777", "192.168.1.1", true, false},
		{"0xa9fea9fe", "169.254.169.254", true, false},
		{"127.0.0.1.", "127.0.0.1", false, false},
		{"256.0.0.1", "", false, true},
		{"1.2.3.4.5", "", false, true},
		{"0x100000000", "", false, true},
		{"4294967296", "", false, true},
		{"1.2.3.08", "", false, true},                  // 08 is not octal
		{"example.0x1g", "example.0x1g", false, false}, // "0x1g" is not a number: a name
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1", false, false},
		{"EXAMPLE.com.", "example.com", false, false},
		{"bücher.example", "xn--bcher-kva.example", false, false},
		{"my_host.example", "my_host.example", false, false},
		{"a..b", "", false, true},
		{"exa mple.com", "", false, true},
		{"evil.com\\@good.com", "", false, true},
		{"1.2.3.4x", "", false, true}, // a name label may not be all that: "4x" is fine, but see below
	}
	for _, c := range cases {
		h, r := ParseHost(c.in)
		if c.in == "1.2.3.4x" {
			// Not an IP (the last label is not a number): a valid name.
			if r != nil || h.IP.IsValid() {
				t.Errorf("%s: %v %v", c.in, h, r)
			}
			continue
		}
		if c.bad {
			if r == nil {
				t.Errorf("%s: accepted as %q", c.in, h.Name)
			} else if r.Rule != RuleMalformed {
				t.Errorf("%s: rule %s", c.in, r.Rule)
			}
			continue
		}
		if r != nil {
			t.Errorf("%s: %v", c.in, r)
			continue
		}
		if h.Name != c.name || h.NonCanonical != c.nonCanonical {
			t.Errorf("%s: %q nonCanonical=%v, want %q %v", c.in, h.Name, h.NonCanonical, c.name, c.nonCanonical)
		}
	}
}

func TestHostListDotBoundary(t *testing.T) {
	l, i, msg := ParseHostList([]string{"api.example.com", "*.docs.example.org", "203.0.113.5", "[2001:db8::1]", "Bücher.Example"})
	if msg != "" {
		t.Fatalf("pattern %d: %s", i, msg)
	}
	cases := []struct {
		host string
		want bool
	}{
		{"api.example.com", true},
		{"API.EXAMPLE.COM.", true},
		{"x.api.example.com", false}, // exact means exact
		{"example.com", false},
		{"api.example.com.evil.test", false},
		{"evilapi.example.com", false},
		{"a.docs.example.org", true},
		{"a.b.docs.example.org", true},
		{"docs.example.org", false}, // *. is sub-domains only
		{"evildocs.example.org", false},
		{"docs.example.org.evil.test", false},
		{"203.0.113.5", true},
		{"203.0.113.50", false},
		{"2001:db8::1", true},
		{"2001:db8:0:0::1", true},
		{"xn--bcher-kva.example", true},
		{"bücher.example", true},
		{"xn--pi-6kc.example.com", false}, // Cyrillic а in "аpi"
	}
	for _, c := range cases {
		h, r := ParseHost(c.host)
		if r != nil {
			t.Errorf("%s: %v", c.host, r)
			continue
		}
		if got := l.Match(h.Name); got != c.want {
			t.Errorf("%s (%s): match %v, want %v", c.host, h.Name, got, c.want)
		}
	}
}

func TestParseHostListRefusesBadPatterns(t *testing.T) {
	for _, p := range []string{
		"https://example.com", "example.com/path", "user@example.com", "example.com:443", "*example.com",
		"a.*.example.com", "*.", "*.1.2.3.4", "127.1", "0x7f000001", "exa mple.com", "",
	} {
		if _, i, msg := ParseHostList([]string{"ok.example", p}); msg == "" || i != 1 {
			t.Errorf("%q: accepted (index %d, %q)", p, i, msg)
		}
	}
}
