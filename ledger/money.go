package ledger

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Nanos is an amount of money in nano-units (10⁻⁹) of a currency: costs
// are integers from the price table to the totals, so that adding up a
// million calls never drifts as floating point does. An int64 holds up to
// about 9.2 billion units of the currency.
type Nanos int64

const nanosPerUnit = 1_000_000_000

// ParseAmount reads a decimal amount such as "0.15", "3" or "2.50" (at
// most nine decimals) exactly.
func ParseAmount(s string) (Nanos, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty amount")
	}
	if s[0] == '-' {
		return 0, fmt.Errorf("%q: an amount is not negative", s)
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || strings.ContainsAny(whole+frac, "+-eE_ ") {
		return 0, fmt.Errorf("%q is not a decimal amount", s)
	}
	if len(frac) > 9 {
		return 0, fmt.Errorf("%q: at most nine decimals", s)
	}
	var w, f int64
	var err error
	if whole != "" {
		if w, err = strconv.ParseInt(whole, 10, 64); err != nil {
			return 0, fmt.Errorf("%q is not a decimal amount", s)
		}
		if w > 9_000_000_000 {
			return 0, fmt.Errorf("%q is too large", s)
		}
	}
	if frac != "" {
		if f, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return 0, fmt.Errorf("%q is not a decimal amount", s)
		}
	}
	return Nanos(w*nanosPerUnit + f), nil
}

// String is the amount as a decimal number, without trailing zeros
// ("0.00000615", "2.5", "0").
func (n Nanos) String() string {
	var b [32]byte
	return string(n.append(b[:0]))
}

func (n Nanos) append(b []byte) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	b = strconv.AppendInt(b, int64(n/nanosPerUnit), 10)
	frac := int64(n % nanosPerUnit)
	if frac == 0 {
		return b
	}
	var d [9]byte
	for i := 8; i >= 0; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	end := 9
	for d[end-1] == '0' {
		end--
	}
	return append(append(b, '.'), d[:end]...)
}

// wide adds up tokens × price per million tokens, in nanos × 10⁶, before
// rounding: a 128-bit sum, as tokens × price can pass 2⁶³.
type wide struct{ hi, lo uint64 }

func (w *wide) add(tokens int64, pricePerMillion Nanos) {
	if tokens <= 0 || pricePerMillion <= 0 {
		return
	}
	hi, lo := bits.Mul64(uint64(tokens), uint64(pricePerMillion))
	var carry uint64
	w.lo, carry = bits.Add64(w.lo, lo, 0)
	w.hi, _ = bits.Add64(w.hi, hi, carry)
}

// nanos divides by a million, rounding half up; a cost beyond an int64
// (absurd token counts) saturates.
func (w wide) nanos() Nanos {
	var carry uint64
	lo, carry := bits.Add64(w.lo, 500_000, 0)
	hi := w.hi + carry
	if hi >= 1_000_000 {
		return Nanos(1<<63 - 1)
	}
	q, _ := bits.Div64(hi, lo, 1_000_000)
	if q > 1<<63-1 {
		return Nanos(1<<63 - 1)
	}
	return Nanos(q)
}
