package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Duration is a time span in configuration. In JSON it is either an integer
// number of milliseconds (30000) or a Go duration string ("30s", "2m").
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as a string, for example "30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON accepts integer milliseconds or a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		*d = 0
		return nil
	}
	if b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "" {
			*d = 0
			return nil
		}
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			return d.setMillis(ms)
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want milliseconds or a duration such as \"30s\"", s)
		}
		if v < 0 {
			return fmt.Errorf("duration %q is negative", s)
		}
		*d = Duration(v)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("duration %s: want milliseconds or a duration such as \"30s\"", b)
	}
	return d.setMillis(int64(f))
}

func (d *Duration) setMillis(ms int64) error {
	if ms < 0 {
		return fmt.Errorf("duration %dms is negative", ms)
	}
	*d = Duration(time.Duration(ms) * time.Millisecond)
	return nil
}
