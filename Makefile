# ruleagent — see README.md.
GO        ?= go
BIN       ?= bin/ruleagent
ADDR      ?= 127.0.0.1:8080
PEERS     := test/peers/node_modules/.package-lock.json
# Two cores: keep package parallelism modest so timing-sensitive tests stay calm.
TESTFLAGS ?= -p 2 -timeout 10m

.PHONY: run build test test-go bench lint peers clean editor test-editor

## run: build, then serve chains/ on http://127.0.0.1:8080
run: editor build
	$(BIN) serve --addr $(ADDR) --chains chains

## build: build the ruleagent binary into bin/
build:
	$(GO) build -o $(BIN) ./cmd/ruleagent

## test: everything CI checks (vet, formatting, all tests with the real protocol peers)
test: peers lint editor test-editor test-go

test-go:
	$(GO) test $(TESTFLAGS) ./...

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

## bench: the performance benchmarks recorded in README.md (Go benchmarks, then the load driver)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./events/ ./tools/ ./tools/scrub/ ./tools/netguard/ ./tools/bash/ ./agent/ ./sessions/
	$(GO) run ./bench/load -runs 1000

## lint: go vet, gofmt and staticcheck (pinned; fetched from the module proxy on first use)
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

clean:
	rm -rf bin
