package redisconn

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/redistest"
)

func TestParse(t *testing.T) {
	opts, prefix, err := Parse("redis://u:p@127.0.0.1:7000/3?prefix=fleet1:")
	if err != nil || prefix != "fleet1:" || opts.Addr != "127.0.0.1:7000" || opts.DB != 3 || opts.Password != "p" {
		t.Fatalf("%+v %q %v", opts, prefix, err)
	}
	if _, prefix, _ := Parse("redis://127.0.0.1:7000/0"); prefix != DefaultPrefix {
		t.Errorf("default prefix %q", prefix)
	}
	if _, _, err := Parse("mongo://x"); err == nil {
		t.Error("a mongo URL parsed")
	}
}

// Start-up waits for a Redis that comes up late, and says each time it
// waits.
func TestOpenWaitsForRedis(t *testing.T) {
	srv := redistest.Start(t)
	srv.Kill(t)
	started := make(chan struct{})
	go func() {
		defer close(started)
		time.Sleep(3 * time.Second)
		srv.Start(t)
	}()
	defer func() { <-started }()
	var waits []string
	c, err := Open(t.Context(), srv.URL+"?prefix=x:", Options{Wait: 10 * time.Second, OnWait: func(n int, err error) {
		waits = append(waits, err.Error())
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(waits) == 0 {
		t.Error("Open never said it was waiting")
	}
	if c.Key("run", "r1") != "x:run:r1" {
		t.Errorf("key %q", c.Key("run", "r1"))
	}
	// Without Wait, a Redis that is not there fails at once.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	if _, err := Open(context.Background(), "redis://"+addr+"/0", Options{}); err == nil || time.Since(start) > 3*time.Second {
		t.Errorf("open of nothing: %v after %s", err, time.Since(start))
	}
}

// A Redis without persistence is told apart from one with an AOF.
func TestPersistence(t *testing.T) {
	for _, persist := range []bool{false, true} {
		srv := redistest.StartWith(t, redistest.Options{Persist: persist})
		c, err := Open(t.Context(), srv.URL, Options{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.Persistence(t.Context())
		c.Close()
		if err != nil || p.Durable() != persist || (persist && p.AppendFsync != "always") {
			t.Errorf("persist %v: %+v %v", persist, p, err)
		}
		if !persist && !strings.Contains(p.String(), "empties") {
			t.Errorf("%q", p.String())
		}
	}
}
