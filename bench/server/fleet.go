package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// fleet: completed runs per second with 1, 2 and 3 replicas on one Redis
// (the client sends runs round robin, as a load balancer without sticky
// sessions would), and what each run costs Redis: commands (INFO
// commandstats) and Redis CPU (INFO cpu), deltas over the saturation
// divided by the runs. Each run is a 4-turn, 3-tool run of an agent with
// a thread session, on a new thread: a session read, a lease held and
// renewed, a turn written.
func (b *bench) fleet() error {
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis-server is missing: apt-get install -y --no-install-recommends redis-server")
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	_, port, _ := strings.Cut(addr, ":")
	rs := exec.Command(redisBin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", b.dir)
	if err := rs.Start(); err != nil {
		return err
	}
	defer func() { _ = rs.Process.Kill(); _, _ = rs.Process.Wait() }()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); rdb.Ping(ctx).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server did not answer on %s", addr)
		}
	}
	chains, err := sessionChains(b.chains, filepath.Join(b.dir, "fleet-chains"))
	if err != nil {
		return err
	}
	for n := 1; n <= 3; n++ {
		var urls []string
		var procs []*process
		for range n {
			p, _, err := startServer(serverOptions{bin: b.bin, chains: chains, llmURL: b.llm, sessionStore: "redis://" + addr + "/0"})
			if err != nil {
				return err
			}
			procs = append(procs, p)
			urls = append(urls, p.URL)
		}
		calls0, cpu0, by0, err := redisStats(ctx, rdb)
		if err != nil {
			return err
		}
		var next, runs atomic.Int64
		rate, err := saturate(b.sz.Workers, b.sz.Saturation, func() error {
			_, err := aguiRun(urls[int(next.Add(1))%len(urls)], "bench", scenarioTools)
			if err == nil {
				runs.Add(1)
			}
			return err
		})
		calls1, cpu1, by1, cerr := redisStats(ctx, rdb)
		for _, p := range procs {
			p.stop()
		}
		if err != nil {
			return err
		}
		if cerr != nil {
			return cerr
		}
		r := float64(runs.Load())
		var per []string
		for cmd, c := range by1 {
			if d := float64(c-by0[cmd]) / r; d >= 0.05 {
				per = append(per, fmt.Sprintf("%s %.2f", cmd, d))
			}
		}
		slices.Sort(per)
		fmt.Fprintf(os.Stderr, "bench: %d replicas, Redis commands per run: %s\n", n, strings.Join(per, ", "))
		b.emit(figure{fmt.Sprintf("FleetThroughput/replicas=%d", n), []value{{rate, "runs/s"},
			{float64(calls1-calls0) / r, "redis-cmds/run"}, {(cpu1 - cpu0) * 1e6 / r, "redis-cpu-us/run"}}})
	}
	return nil
}

// redisStats is redisCost with each command's calls.
func redisStats(ctx context.Context, rdb *redis.Client) (calls int64, cpu float64, byCmd map[string]int64, err error) {
	info, err := rdb.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return 0, 0, nil, err
	}
	byCmd = map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(k, "cmdstat_"):
			for _, f := range strings.Split(v, ",") {
				if n, ok := strings.CutPrefix(f, "calls="); ok {
					c, _ := strconv.ParseInt(n, 10, 64)
					calls += c
					byCmd[strings.TrimPrefix(k, "cmdstat_")] = c
				}
			}
		case k == "used_cpu_user" || k == "used_cpu_sys":
			f, _ := strconv.ParseFloat(v, 64)
			cpu += f
		}
	}
	return calls, cpu, byCmd, nil
}

// sessionChains copies the bench chains of src into dst with a thread
// session on each agent.
func sessionChains(src, dst string) (string, error) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	files, err := filepath.Glob(filepath.Join(src, "*.json"))
	if err != nil {
		return "", err
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		var chain map[string]any
		if err := json.Unmarshal(raw, &chain); err != nil {
			return "", err
		}
		for _, n := range chain["metadata"].(map[string]any)["nodes"].([]any) {
			n.(map[string]any)["configuration"].(map[string]any)["session"] = map[string]any{"scope": "thread"}
		}
		out, err := json.MarshalIndent(chain, "", "  ")
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), out, 0o644); err != nil {
			return "", err
		}
	}
	return dst, nil
}
