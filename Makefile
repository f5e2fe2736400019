# ruleagent — see README.md.
GO        ?= go
BIN       ?= bin/ruleagent
ADDR      ?= 127.0.0.1:8080
PEERS     := test/peers/node_modules/.package-lock.json
# Two cores: keep package parallelism modest so timing-sensitive tests stay calm.
TESTFLAGS ?= -p 2 -timeout 10m

.PHONY: run build test test-go bench lint peers clean

## run: build, then serve chains/ on http://127.0.0.1:8080
run: build
	$(BIN) serve --addr $(ADDR) --chains chains

## build: build the ruleagent binary into bin/
build:
	$(GO) build -o $(BIN) ./cmd/ruleagent

## test: everything CI checks (vet, formatting, all tests with the real protocol peers)
test: peers lint test-go

test-go:
	$(GO) test $(TESTFLAGS) ./...

## peers: install the npm protocol peers used by the tests (once)
peers: $(PEERS)
$(PEERS): test/peers/package.json test/peers/package-lock.json
	npm ci --prefix test/peers --no-audit --no-fund --loglevel=error
	@touch $@

## bench: the performance benchmarks recorded in README.md (Go benchmarks, then the load driver)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./events/ ./tools/ ./tools/scrub/ ./tools/netguard/ ./agent/ ./sessions/
	$(GO) run ./bench/load -runs 1000

## lint: go vet and gofmt
lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

clean:
	rm -rf bin
