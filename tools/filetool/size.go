package filetool

import "fmt"

// Size formats a byte count for the model: exact below 1 KiB, then KiB, MiB
// or GiB with one decimal.
func Size(n int64) string {
	switch {
	case n < 1<<10:
		if n == 1 {
			return "1 byte"
		}
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
}
