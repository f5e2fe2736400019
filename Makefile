# ruleagent — see README.md.
GO        ?= go
BIN       ?= bin/ruleagent
ADDR      ?= 127.0.0.1:8080
PEERS     := test/peers/node_modules/.package-lock.json
# Two cores: keep package parallelism modest so timing-sensitive tests stay calm.
TESTFLAGS ?= -p 2 -timeout 10m

.PHONY: run build test test-go test-fleet test-tracing jaeger fuzz bench bench-save bench-compare lint peers clean editor test-editor

## run: build, then serve chains/ on http://127.0.0.1:8080
run: editor build
	$(BIN) serve --addr $(ADDR) --chains chains

## build: build the ruleagent binary into bin/ (no symbol table or DWARF, no local paths)
build:
	$(GO) build -trimpath -ldflags="-s -w" -o $(BIN) ./cmd/ruleagent

## test: everything CI checks (vet, formatting, all tests with the real protocol peers)
test: peers lint editor test-editor test-go

test-go:
	$(GO) test $(TESTFLAGS) ./...

## test-fleet: the slow fleet tests, skipped by make test: 6 s leases, Redis frozen for 5 s, killed and
## restarted, replicas behind nginx (needs redis-server and nginx; RULEAGENT_TEST_FLEET=1 runs them)
FLEET_PKGS ?= ./state/... ./sessions/ ./internal/fleettest/ ./test/fleet/
test-fleet:
	RULEAGENT_TEST_FLEET=1 $(GO) test -p 1 -count=1 -timeout 30m $(FLEET_PKGS)

## test-tracing: export real runs' traces over OTLP to a real Jaeger and read them back (its own
## target: building Jaeger takes minutes the first time; the binary is cached, see test/jaeger/build.sh)
test-tracing: peers build jaeger
	$(GO) vet -tags tracing ./test/tracing/
	$(GO) run $(STATICCHECK) -tags tracing ./test/tracing/
	JAEGER_BIN=$(CURDIR)/bin/jaeger RULEAGENT_BIN=$(CURDIR)/$(BIN) $(GO) test -tags tracing -count=1 -p 1 -timeout 10m ./test/tracing/

## jaeger: build Jaeger all-in-one from the Go module pinned in test/jaeger (its own go.mod, so
## Jaeger's dependencies stay out of ours) into a cache, linked to bin/jaeger
jaeger:
	@test/jaeger/build.sh >/dev/null

## fuzz: run every fuzz target (each func FuzzX of a _test.go) for FUZZTIME (a duration, or Nx
## executions); a failing input is written to the package's testdata/fuzz/FuzzX/, where go test then
## runs it as a regression seed (see .ci/fuzz)
FUZZTIME ?= 10s
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) bash .ci/fuzz

## editor: build the web editor into editor/dist/app (embedded by `go build`), when its sources changed
EDITOR_SRC := $(shell find editor/src -type f 2>/dev/null) editor/index.html editor/vite.config.ts editor/tsconfig.json editor/package.json
editor: editor/.build-stamp
editor/node_modules/.package-lock.json: editor/package.json editor/package-lock.json
	npm ci --prefix editor --no-audit --no-fund --loglevel=error
	@touch $@
editor/.build-stamp: editor/node_modules/.package-lock.json $(EDITOR_SRC)
	cd editor && npx tsc --noEmit && npx vite build --logLevel warn
	@touch $@

## test-editor: the editor's unit tests (vitest); its browser tests run in go test ./editor
test-editor: editor/node_modules/.package-lock.json
	cd editor && npx vitest run

## peers: install the npm protocol peers used by the tests (once)
peers: $(PEERS)
$(PEERS): test/peers/package.json test/peers/package-lock.json
	npm ci --prefix test/peers --no-audit --no-fund --loglevel=error
	@touch $@

## bench: every performance figure of README.md in one table (Go benchmarks, the in-process load
## driver, the server load client); all result lines go to bench/out/latest.txt (benchstat format)
BENCHSTAT := $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
BASELINE  ?= bench/out/baseline.txt
bench: build
	$(GO) run ./bench/report -bin $(BIN) -out bench/out/latest.txt

## bench-save: keep the last make bench results as the baseline (BASELINE, not committed)
bench-save:
	@test -f bench/out/latest.txt || { echo "run make bench first"; exit 1; }
	cp bench/out/latest.txt $(BASELINE)
	@echo "baseline saved: $(BASELINE)"

## bench-compare: run make bench again and compare it with the baseline (benchstat)
bench-compare: bench
	@test -f $(BASELINE) || { echo "no baseline: run make bench-save after a make bench"; exit 1; }
	$(BENCHSTAT) $(BASELINE) bench/out/latest.txt

## lint: go vet, gofmt and staticcheck (pinned; fetched from the module proxy on first use)
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

clean:
	rm -rf bin
