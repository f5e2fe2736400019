package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// startup: time from exec to the first answer with 1 and with many chains,
// and from the interrupt to exit; the cost per chain is the difference.
func (b *bench) startup() error {
	type cost struct {
		ready, stop time.Duration
		idle        float64
	}
	measure := func(chains string) (cost, error) {
		p, ready, err := startServer(serverOptions{bin: b.bin, chains: chains, llmURL: b.llm})
		if err != nil {
			return cost{}, err
		}
		idle, _ := p.rss()
		took, err := p.stop()
		return cost{ready, took, idle}, err
	}
	many, err := writeChains(filepath.Join(b.dir, "chains-many"), b.ws, b.sz.StartChains)
	if err != nil {
		return err
	}
	var c1, cn []cost
	for i := 0; i < 3; i++ {
		c, err := measure(b.chains)
		if err != nil {
			return err
		}
		c1 = append(c1, c)
		if c, err = measure(many); err != nil {
			return err
		}
		cn = append(cn, c)
	}
	med := func(cs []cost, f func(cost) float64) float64 {
		v := make([]float64, len(cs))
		for i, c := range cs {
			v[i] = f(c)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	ready := func(c cost) float64 { return ms(c.ready) }
	stop := func(c cost) float64 { return ms(c.stop) }
	idle := func(c cost) float64 { return c.idle }
	per := float64(b.sz.StartChains - 1)
	b.emit(figure{"ServerStartup/chains=1", []value{{med(c1, ready), "ready-ms"}, {med(c1, stop), "shutdown-ms"}, {med(c1, idle), "idle-MiB"}}})
	b.emit(figure{fmt.Sprintf("ServerStartup/chains=%d", b.sz.StartChains), []value{
		{med(cn, ready), "ready-ms"}, {med(cn, stop), "shutdown-ms"}, {med(cn, idle), "idle-MiB"},
		{(med(cn, ready) - med(c1, ready)) / per, "load-ms/chain"},
		{(med(cn, stop) - med(c1, stop)) / per, "shutdown-ms/chain"},
		{(med(cn, idle) - med(c1, idle)) * 1024 / per, "idle-KiB/chain"}}})
	return nil
}

// writeChains writes n agent chains (bench, bench-2, ...) into dir.
func writeChains(dir, ws string, n int) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for i := 1; i <= n; i++ {
		id := "bench"
		if i > 1 {
			id = fmt.Sprintf("bench-%d", i)
		}
		chain := map[string]any{
			"ruleChain": map[string]any{"id": id, "name": "Bench " + id, "root": true},
			"metadata": map[string]any{"firstNodeIndex": 0, "connections": []any{}, "nodes": []any{map[string]any{
				"id": "agent", "type": "ai/agent", "name": "Agent",
				"configuration": map[string]any{
					"url": "${global.llm_url}", "key": "${global.api_key}", "model": "${global.model}",
					"systemPrompt": "You read notes.", "maxStep": 8, "workspace": ws,
					"tools": []any{map[string]any{"type": "builtin", "name": "read"}},
				}}}},
		}
		b, err := json.MarshalIndent(chain, "", "  ")
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, id+".json"), b, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}
